"""The multi-HPU checks, in one launch of N ranks: DDP over HCCL, all-reduce bandwidth, an FSDP2 step, ZeRO-2.

The command starts every rank at once (``LOCAL_RANK`` set, as torchrun does), and each runs the same checks in the
same order; the later Trainers and the bandwidth measurement reuse the first one's process group. Rank 0 alone
sends the rows.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import math
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
from lightning.pytorch import Trainer
from typing_extensions import override

from lightning_hpu.check import expectations as expect
from lightning_hpu.check.faults import fault
from lightning_hpu.check.rows import Row, emit, verdict
from lightning_hpu.check.runner import run_row
from lightning_hpu.pytorch.check.model import CheckTransformer, flat_parameters, token_data
from lightning_hpu.pytorch.strategies import HPUModelParallelStrategy, HPUParallelStrategy
from lightning_hpu.runtime import bridge_emulated, require_backend

#: What the later rows check (the DDP row's names the device count).
WHAT = {
    "multi.allreduce": "all-reduce bus bandwidth",
    "multi.fsdp2": "FSDP2 step",
    "multi.deepspeed": "DeepSpeed ZeRO-2 fit",
}


class ShardedTransformer(CheckTransformer):
    """The check's transformer with FSDP2 (``fully_shard``) on each of its modules, over the data-parallel mesh."""

    @override
    def configure_model(self) -> None:
        from torch.distributed.fsdp import fully_shard

        assert self.device_mesh is not None, "HPUModelParallelStrategy sets the mesh before configure_model"
        mesh = self.device_mesh["data_parallel"]
        for module in (self.embed, *self.blocks, self.norm, self.head):
            fully_shard(module, mesh=mesh)


def spread_between_ranks(values: torch.Tensor) -> float:
    """The largest difference between any rank's ``values`` and rank 0's (0 when all ranks hold the same)."""
    gathered = [torch.zeros_like(values) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, values)
    return max(float((other - gathered[0]).abs().max()) for other in gathered)


def full_parameters(module: torch.nn.Module) -> torch.Tensor:
    """Every parameter in full (sharded ones gathered), flattened, on the module's device."""
    return torch.cat(
        [getattr(p, "full_tensor", lambda p=p: p)().detach().float().flatten() for p in module.parameters()]
    )


def release_mismatch(deepspeed_version: str) -> str:
    """Why Intel's DeepSpeed fork does not match the installed Gaudi release ("" when it does, or is unknown)."""
    try:
        bridge = importlib.metadata.version("habana-torch-plugin")  # 1.20.0.543
    except importlib.metadata.PackageNotFoundError:
        return ""
    release = ".".join(bridge.split(".")[:3])
    if f"v{release}" in deepspeed_version:
        return ""
    return f"DeepSpeed {deepspeed_version} is Intel's fork for another Gaudi release than this one ({release})"


class MultiChecks:
    """The multi-HPU rows on ``devices`` HPUs, ``steps`` steps per fit; ``quick`` measures smaller messages."""

    def __init__(self, checks: set[str], devices: int, steps: int, quick: bool) -> None:
        self.devices, self.steps, self.quick = devices, steps, quick
        self.standin = bridge_emulated()
        self.rank = 0
        self.device = torch.device("cpu")

    def trainer(self, strategy: Any, **options: Any) -> Trainer:
        settings: dict[str, Any] = {
            "max_steps": self.steps,
            "max_epochs": -1,
            "logger": False,
            "enable_checkpointing": False,
            "enable_progress_bar": False,
            "enable_model_summary": False,
        }
        return Trainer(accelerator="hpu", devices=self.devices, strategy=strategy, **{**settings, **options})

    def row(self, name: str, what: str, body: Callable[[], Row]) -> None:
        row = run_row(name, what, body)
        if self.rank == 0:
            emit(row)

    def run(self) -> None:
        self.row("multi.ddp", f"DDP over HCCL on {self.devices} HPUs", self.ddp)
        later = {"multi.allreduce": self.allreduce, "multi.fsdp2": self.fsdp2, "multi.deepspeed": self.deepspeed}
        for name, body in later.items():
            if not dist.is_initialized():  # the DDP row says why the ranks never met
                body = self.without_process_group
            self.row(name, WHAT[name], body)

    @staticmethod
    def without_process_group() -> Row:
        raise RuntimeError("the DDP fit set up no process group, so the ranks cannot meet (see multi.ddp)")

    def ddp(self) -> Row:
        model = CheckTransformer()
        trainer = self.trainer(HPUParallelStrategy())
        trainer.fit(model, token_data())
        self.rank, self.device = trainer.global_rank, trainer.strategy.root_device
        weights = flat_parameters(model).to(trainer.strategy.root_device)
        if fault("multi.ddp") and self.rank == 1:
            weights[0] += 1e-3
        spread = spread_between_ranks(weights)
        row = Row("multi.ddp", f"DDP over HCCL on {self.devices} HPUs", verdict(spread == 0.0), value=spread)
        row.figure, row.expected = f"weights differ by {spread:.3g}", "0 between ranks"
        return row

    def allreduce(self) -> Row:
        device = self.device
        world = dist.get_world_size()
        sizes = [2**p for p in (range(12, 23, 2) if self.quick else range(16, 29, 2))]  # bytes: 4 KB up
        iterations = 3 if self.quick else 10
        bandwidths: list[float] = []
        wrong: list[int] = []
        for size in sizes:
            tensor = torch.full((size // 4,), float(self.rank + 1), device=device)
            if fault("multi.allreduce") and self.rank == 1:
                tensor += 1
            dist.all_reduce(tensor)  # warm-up, and the correctness check
            if float(tensor[0]) != world * (world + 1) / 2:
                wrong.append(size)
            require_backend().synchronize()
            start = time.perf_counter()
            for _ in range(iterations):
                dist.all_reduce(tensor)
            require_backend().synchronize()
            seconds = (time.perf_counter() - start) / iterations
            bandwidths.append(size * 2 * (world - 1) / world / seconds)
        best = max(bandwidths)
        link = expect.generation(require_backend().device_name()).link_bytes_per_second
        row = Row(
            "multi.allreduce", WHAT["multi.allreduce"], verdict(not wrong), value=best / 1e9, standin=self.standin
        )
        row.figure = f"{best / 1e9:.2f} GB/s at {sizes[bandwidths.index(best)] / 2**20:g} MiB"
        row.extra = {"sizes": sizes, "bus_bandwidth": bandwidths}
        if wrong:
            row.detail = f"wrong sums at {wrong} bytes"
        if link is None or self.standin or self.quick:
            row.expected = "correct sums" + (f"; link {link / 1e9:g} GB/s" if link else "")
        else:
            row.expected = f">= {expect.BANDWIDTH_FRACTION:.0%} of {link / 1e9:g} GB/s"
            row.result = verdict(not wrong and best >= expect.BANDWIDTH_FRACTION * link)
        return row

    def fsdp2(self) -> Row:
        model = ShardedTransformer(lr=0.0 if fault("multi.fsdp2") else 3e-3)
        trainer = self.trainer(
            HPUModelParallelStrategy(data_parallel_size=self.devices, tensor_parallel_size=1), max_steps=1
        )
        trainer.fit(model, token_data())
        after = full_parameters(model)
        initial = flat_parameters(CheckTransformer()).to(after.device)
        change = float((after - initial).abs().max())
        spread = spread_between_ranks(after)
        ok = change > 0 and spread == 0.0 and math.isfinite(model.losses[0])
        row = Row("multi.fsdp2", WHAT["multi.fsdp2"], verdict(ok))
        row.figure = f"loss {model.losses[0]:.3f}, weights moved {change:.3g}"
        row.expected = "weights move, same on every rank"
        return row

    def deepspeed(self) -> Row:
        what = WHAT["multi.deepspeed"]
        if importlib.util.find_spec("deepspeed") is None:
            return Row("multi.deepspeed", what, "n/a", detail="DeepSpeed is not installed")
        version = importlib.metadata.version("deepspeed")
        fork = "hpu" in version or "synapse" in version  # Intel's fork: 0.16.1+hpu.synapse.v1.20.0
        which = "Intel's fork" if fork else "upstream"
        release = release_mismatch(version) if fork else ""
        model = CheckTransformer()
        trainer = self.trainer("hpu_deepspeed_stage_2", precision="bf16-mixed")
        trainer.fit(model, token_data())
        weights = flat_parameters(model).to(trainer.strategy.root_device)
        if fault("multi.deepspeed") and self.rank == 1:
            weights[0] += 1e-3
        spread = spread_between_ranks(weights)
        ok = spread == 0.0 and expect.loss_falls(model.losses) and not release
        row = Row("multi.deepspeed", what, verdict(ok), value=spread, detail=release)
        row.figure = f"{version} ({which}), spread {spread:.3g}"
        row.expected = "loss falls, 0 between ranks"
        return row
