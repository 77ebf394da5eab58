"""A Gaudi script in eager mode (current Gaudi software's default) with DDP on two HPUs, run unchanged on the stand-in.

It imports ``habana_frameworks``, Lightning and lightning_hpu (which registers ``accelerator="hpu"`` with Lightning 2.6,
on a Gaudi as here). Lightning starts the second process by running this script again: the start-up hook must serve
``habana_frameworks`` there too. Run
by tests/gaudi_standin/bridge/test_gaudi_scripts.py with ``LIGHTNING_HPU_CPU_DEVICES=2``; each rank writes
``rank<N>.json`` into the
folder given as the argument. Rank 0 also checks eager mode's rules, ``torch.compile``, autocast and DeepSpeed.
"""

import habana_frameworks.torch.core as htcore  # noqa: I001 (first, as Gaudi scripts do)

import json
import os
import sys
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from habana_frameworks.torch.hpex.optimizers import FusedSGD
from lightning.pytorch import LightningModule, Trainer
from torch import nn

import lightning_hpu  # noqa: F401 (registers accelerator="hpu" and the HPU strategies)
from torch.utils.data import DataLoader, TensorDataset

OUT = Path(sys.argv[1])
report: dict[str, Any] = {"launched_child": "LOCAL_RANK" in os.environ}


class Net(LightningModule):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Linear(8, 1)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        offset = torch.zeros(1, device="hpu")  # made on "hpu" in every process
        return F.mse_loss(self.net(x) + offset, y)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return FusedSGD(self.parameters(), lr=0.1)


if not report["launched_child"]:
    # Eager mode: step markers are no-ops and the graph API is missing, as on a Gaudi.
    from gaudi_standin.emulator import machine as standin_runtime

    counters = standin_runtime.current().counters
    report["is_lazy"] = htcore.is_lazy()
    before = counters.mark_steps
    htcore.mark_step()
    report["eager_mark_steps_counted"] = counters.mark_steps - before
    report["graph_api_present"] = hasattr(htcore.hpu, "HPUGraph")
    try:
        htcore.hpu.wrap_in_hpu_graph(nn.Linear(2, 2))
    except AttributeError as err:
        report["graph_api_error"] = str(err)

    # The hpu device under autocast and torch.compile: the host's autocast leaves hpu tensors alone, HPU's lowers them.
    layer = nn.Linear(4, 4).to("hpu")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        report["autocast_dtype"] = str(layer(torch.randn(2, 4, device="hpu")).dtype)
    with torch.autocast(device_type="hpu", dtype=torch.bfloat16):  # as a Gaudi script writes it
        report["hpu_autocast_dtype"] = str(layer(torch.randn(2, 4, device="hpu")).dtype)
    report["after_hpu_autocast_dtype"] = str(layer(torch.randn(2, 4, device="hpu")).dtype)

    def lowered(x: torch.Tensor) -> torch.Tensor:
        with torch.autocast(device_type="hpu", dtype=torch.bfloat16):
            return layer(x) * 2

    report["compiled_hpu_autocast_dtype"] = str(
        torch.compile(lowered, backend="aot_eager")(torch.randn(2, 4, device="hpu")).dtype
    )

    def step(x: torch.Tensor) -> torch.Tensor:
        return (x * 2 + torch.ones(x.shape, device="hpu")).to("hpu").sin()

    x = torch.randn(3, device="hpu")
    explanation = torch._dynamo.explain(step)(x)
    report["compile_graphs"] = explanation.graph_count
    report["compile_graph_breaks"] = explanation.graph_break_count
    report["compiled_matches_eager"] = torch.allclose(torch.compile(step, backend="aot_eager")(x), step(x))

    from deepspeed.accelerator import get_accelerator

    report["deepspeed_accelerator"] = [get_accelerator().device_name(), type(get_accelerator()).__name__]

torch.manual_seed(0)
data = TensorDataset(torch.randn(32, 8), torch.randn(32, 1))
trainer = Trainer(
    accelerator="hpu",
    devices=2,
    strategy="ddp",
    max_steps=3,
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
)
model = Net()
trainer.fit(model, DataLoader(data, batch_size=4))
report.update(
    rank=trainer.global_rank,
    current_device=torch.hpu.current_device(),
    process_group=dist.get_backend() if dist.is_initialized() else None,
    weights=[float(v) for v in model.net.weight.detach().flatten()],
    tensor_device=str(torch.ones(1, device="hpu").device),
)
(OUT / f"rank{trainer.global_rank}.json").write_text(json.dumps(report))
