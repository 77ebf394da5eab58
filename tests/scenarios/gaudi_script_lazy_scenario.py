"""A training script written for a Gaudi as Intel's and Lightning's HPU docs write it, run unchanged on the stand-in.

``habana_frameworks`` comes first, before torch and Lightning; tensors are made with ``device="hpu"``, models
moved with ``.to("hpu")``; the seeds' HPU-graph code (capture and replay with ``htcore.hpu.graph``,
``make_graphed_callables``, ``ModuleCacher`` and ``wrap_in_hpu_graph`` through ``htcore.hpu``, ``htcore.mark_step``
around a dynamic op) runs inside ``Trainer(accelerator="hpu")``. Run by
tests/gaudi_standin/bridge/test_gaudi_scripts.py with
``PT_HPU_LAZY_MODE=1``; it writes what it saw as JSON to the path given as its argument.
"""

import habana_frameworks.torch.core as htcore  # noqa: I001 (first, as Gaudi scripts do)

import json
import random
import sys
from typing import Any

import torch
import torch.nn.functional as F
from habana_frameworks.torch.hpex.normalization import FusedClipNorm
from habana_frameworks.torch.hpex.optimizers import FusedAdamW
from lightning.pytorch import LightningModule, Trainer
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from gaudi_standin.emulator import machine as standin_runtime
from lightning_hpu.runtime import bridge_installed

_batch_size, FEATURES, CLASSES, STEPS = 8, 16, 4, 6
max_graphs = 2
report: dict[str, Any] = {}


def data_module(samples: int = _batch_size * STEPS) -> DataLoader:
    x = torch.randn(samples, FEATURES, device="hpu")
    y = torch.softmax(torch.randn(samples, CLASSES, device="hpu"), dim=1)
    return DataLoader(TensorDataset(x, y), batch_size=_batch_size, drop_last=True)


def trainer() -> Trainer:
    return Trainer(
        accelerator="hpu",
        devices=1,
        max_epochs=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )


class NetHPUGraphs(LightningModule):
    """A small classifier trained with Habana's FusedAdamW, clipped with FusedClipNorm."""

    def __init__(self, mode: str | None = None, batch_size: int | None = None) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU(), nn.Linear(32, CLASSES))
        self.clip = FusedClipNorm(self.parameters(), 1.0)
        self.norms: list[float] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        data, target = batch
        loss = F.cross_entropy(self(data), target)
        self.log("train_loss", loss)
        return loss

    def on_before_optimizer_step(self, optimizer: Any) -> None:
        self.norms.append(float(self.clip.clip_norm(self.parameters())))

    def test_step(self, batch: Any, batch_idx: int) -> None:
        data, target = batch
        self.log("test_loss", F.cross_entropy(self(data), target))

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return FusedAdamW(self.parameters(), lr=0.01)


# --- the device, as a Gaudi script asks for it -------------------------------------------------------------------
report["is_available"] = torch.hpu.is_available()
report["device_count"] = torch.hpu.device_count()
report["device_name"] = torch.hpu.get_device_name()
report["is_lazy"] = htcore.is_lazy()
report["hpu_is_torch_hpu"] = htcore.hpu is torch.hpu
report["bridge_installed"] = bridge_installed()
counters = standin_runtime.current().counters
before = counters.mark_steps
htcore.mark_step()
report["mark_step_counted"] = counters.mark_steps - before
report["tensor_device"] = str(torch.randn(2, 3, device="hpu").device)
report["to_device"] = str(torch.zeros(1).to(torch.device("hpu")).device)
report["memory_keys"] = sorted(torch.hpu.memory_stats())
torch.hpu.manual_seed(7)
first = torch.randn(3, device="hpu")
torch.hpu.manual_seed(7)
report["hpu_seed_repeats"] = torch.equal(first, torch.randn(3, device="hpu"))
report["set_inference_env"] = htcore.hpu_set_inference_env() is None
torch.hpu.reset_peak_memory_stats()
report["max_memory_allocated"] = torch.hpu.max_memory_allocated()

# --- plain training with FusedAdamW and FusedClipNorm, model moved with .to("hpu") --------------------------------
model = NetHPUGraphs().to("hpu")
report["param_device"] = str(next(model.parameters()).device)
start = [p.detach().cpu() for p in model.parameters()]
trainer().fit(model, data_module())
report["fused_adamw_trained"] = all(
    not torch.equal(a, p.detach().cpu()) for a, p in zip(start, model.parameters(), strict=True)
)
report["fused_clip_norms"] = len(model.norms)


# --- seed: manual capture and replay in training --------------------------------------------------------------
class HPUGraphsModel(LightningModule):
    def __init__(self, batch_size: int = _batch_size) -> None:
        """init"""
        super().__init__()
        self.net = nn.Linear(FEATURES, CLASSES)
        # Create a HPUGraph instance
        self.g = htcore.hpu.HPUGraph()
        # Placeholders for capture. Should be compliant with data and target dims
        self.static_input = torch.rand(batch_size, FEATURES, device="hpu")
        self.static_target = torch.rand(batch_size, CLASSES, device="hpu")
        # result is available in static_loss tensor after graph is replayed
        self.static_loss: torch.Tensor | None = None
        self.losses: list[float] = []
        # Set manual optimization training
        self.automatic_optimization = False
        self.training_step = self.train_with_capture_and_replay

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        # The bridge's fused optimizer is a device kernel: its step is captured with forward and backward.
        return FusedAdamW(self.parameters(), lr=0.05)

    def train_with_capture_and_replay(self, batch: Any, batch_idx: int) -> torch.Tensor:
        """Manual optimization training step"""
        optimizer = self.optimizers()
        if batch_idx == 0 and self.current_epoch == 0:
            optimizer.zero_grad(set_to_none=True)
            # Capture graphs using HPUGraph ContextManager.
            with htcore.hpu.graph(self.g):
                static_y_pred = self(self.static_input)
                self.static_loss = F.cross_entropy(static_y_pred, self.static_target)
                self.static_loss.backward()
                optimizer.step()
                return self.static_loss
        else:
            # data must be copied to existing tensors that were used in the capture phase
            data, target = batch
            self.static_input.copy_(data)
            self.static_target.copy_(target)
            self.g.replay()
            self.log("train_loss", self.static_loss)
            self.losses.append(float(self.static_loss))  # type: ignore[arg-type]
            return self.static_loss  # type: ignore[return-value]


captures, replays = counters.graph_captures, counters.graph_replays
graphed = HPUGraphsModel()
start = [p.detach().clone() for p in graphed.parameters()]
trainer().fit(graphed, data_module())
report["capture_replay"] = {
    "captures": counters.graph_captures - captures,
    "replays": counters.graph_replays - replays,
    "trained": all(not torch.equal(a, p) for a, p in zip(start, graphed.parameters(), strict=True)),
    "losses_vary": len(set(graphed.losses)) > 1,
}

# --- seed: make_graphed_callables ---------------------------------------------------------------------------------
captures, replays = counters.graph_captures, counters.graph_replays
model = NetHPUGraphs().to(torch.device("hpu"))
x = torch.randn(_batch_size, FEATURES, device="hpu")
model = htcore.hpu.make_graphed_callables(model, (x,))
start = [p.detach().cpu() for p in model.parameters()]
trainer().fit(model, data_module())
report["make_graphed_callables"] = {
    "captures": counters.graph_captures - captures,
    "replays": counters.graph_replays - replays,
    "trained": all(not torch.equal(a, p.detach().cpu()) for a, p in zip(start, model.parameters(), strict=True)),
}

# --- seed: ModuleCacher ------------------------------------------------------------------------------------------
inserts, hits = counters.graph_cache_inserts, counters.graph_cache_hits
model = NetHPUGraphs()
htcore.hpu.ModuleCacher(max_graphs)(model=model, inplace=True)
trainer().fit(model, data_module())
report["module_cacher"] = {"inserts": counters.graph_cache_inserts - inserts, "hits": counters.graph_cache_hits - hits}

# --- seed: wrap_in_hpu_graph for inference --------------------------------------------------------------------
inserts, hits = counters.graph_cache_inserts, counters.graph_cache_hits
model = NetHPUGraphs(mode="test").to(torch.device("hpu"))
model = htcore.hpu.wrap_in_hpu_graph(model, asynchronous=False, disable_tensor_cache=True)
results = trainer().test(model, data_module())
report["wrap_in_hpu_graph"] = {
    "inserts": counters.graph_cache_inserts - inserts,
    "hits": counters.graph_cache_hits - hits,
    "test_loss": results[0]["test_loss"],
}


# --- seed: dynamic control flow and dynamic ops between graphed modules -------------------------------------------
class DynamicModel(LightningModule):
    def __init__(self, mode: str | None = None, batch_size: int | None = None) -> None:
        """init"""
        super().__init__()
        self.module1 = NetHPUGraphs()
        self.module2 = nn.Identity()
        self.module3 = nn.ReLU()
        htcore.hpu.ModuleCacher(max_graphs)(model=self.module1, inplace=True)
        htcore.hpu.ModuleCacher(max_graphs)(model=self.module2, inplace=True)
        htcore.hpu.ModuleCacher(max_graphs)(model=self.module3, inplace=True)
        self.automatic_optimization = False
        self.mark_steps_in_step: list[int] = []

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        optimizer = self.optimizers()
        data, target = batch
        optimizer.zero_grad(set_to_none=True)
        tmp = self.module1(data)
        # dynamic control flow
        tmp = self.module2(tmp) if random.random() > 0.5 else self.module3(tmp)
        # Dynamic op
        before = counters.mark_steps
        htcore.mark_step()
        kept = tmp[torch.where(tmp < 0)]
        htcore.mark_step()
        self.mark_steps_in_step.append(counters.mark_steps - before)
        loss = F.cross_entropy(tmp, target) + kept.float().mean().nan_to_num() * 0.0
        self.manual_backward(loss)
        optimizer.step()
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return FusedAdamW(self.parameters(), lr=0.01)


inserts = counters.graph_cache_inserts
dynamic = DynamicModel()
trainer().fit(dynamic, data_module())
report["dynamic"] = {"inserts": counters.graph_cache_inserts - inserts, "mark_steps": dynamic.mark_steps_in_step}


# --- the bridge's hpu package: graphs and metrics submodules, dynamic shapes, autocast state, utils.debug --------
import habana_frameworks.torch.hpu.graphs as hpu_graphs  # noqa: E402 (a script's later imports)
import habana_frameworks.torch.utils.debug as hpu_debug  # noqa: E402
from habana_frameworks.torch.hpu.metrics import metric_global, metric_localcontext  # noqa: E402

gc_metric = metric_global("graph_compilation")
first, first_data = NetHPUGraphs(), data_module()
htcore.mark_step()  # the data made on the device is a graph of its own, before each run
with metric_localcontext("graph_compilation") as warm_up:
    trainer().fit(first, first_data)
    htcore.mark_step()  # the end of the fit (the model's move back to the host) is a graph of its own
second, data = NetHPUGraphs(), data_module()
htcore.mark_step()  # the set-up ops above form a graph of their own
with metric_localcontext("graph_compilation") as after_warm_up:
    trainer().fit(second, data)
recompile_reason = standin_runtime.current().last_graph_compilation_reason()
torch.hpu.enable_dynamic_shape()
htcore.mark_step()
with metric_localcontext("graph_compilation") as dynamic_sizes:
    for rows in (3, 5, 7):
        torch.randn(rows, FEATURES, device="hpu").relu().sum(0)
        htcore.mark_step()
torch.hpu.disable_dynamic_shape()
with torch.autocast(device_type="hpu", dtype=torch.bfloat16):
    autocast_inside = torch.hpu.is_autocast_hpu_enabled()
report["bridge_modules"] = {
    "graphs_is_torch_hpu_graphs": torch.hpu.graphs is hpu_graphs and hpu_graphs.HPUGraph is htcore.hpu.HPUGraph,
    "warm_up_compiles": dict(warm_up.stats())["TotalNumber"] > 0,
    "recompiles_after_warm_up": dict(after_warm_up.stats())["TotalNumber"],
    "recompile_reason": recompile_reason if dict(after_warm_up.stats())["TotalNumber"] else None,
    "dynamic_size_compiles": dict(dynamic_sizes.stats())["TotalNumber"],
    "global_counted": gc_metric is not None and dict(gc_metric.stats())["TotalNumber"] > 0,
    "autocast": [autocast_inside, torch.hpu.is_autocast_hpu_enabled()],
    "fallbacks": hpu_debug._get_fallback_op_count(),
}

with open(sys.argv[1], "w") as out:
    json.dump(report, out)
