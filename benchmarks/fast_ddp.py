"""Fast DDP against DDP on two stand-in HPUs: CPU time, wall time and tensor allocations per training step.

One run trains a 6.4 MB MLP (1.6 M fp32 parameters) on 2 processes, several rounds, each round every configuration
in turn (so machine load hits all of them alike), and prints the median per step:

* ``ddp (Lightning defaults)``: ``DistributedDataParallel`` with 25 MB buckets, gradients copied into buckets;
* ``ddp (Gaudi defaults)``: what ``hpu_parallel`` uses unless told otherwise (230 MB, gradients as bucket views);
* ``fast_ddp``: one pre-scaled all-reduce of persistent flat buffers per optimizer step;
* ``fast_ddp bf16 wire``: the same, the buffer in bf16 (``reduce_dtype=torch.bfloat16``).

CPU time is the process's (all threads, the collective's included) on rank 0; allocations are aten ops that
return a new tensor, counted over whole steps after the timed ones. It also times the two ways fast DDP can fill
its buffer (one ``div(out=)`` per gradient, or ``_foreach_copy_`` then one division) on this model and on 320 small
tensors, which is how ``lightning_hpu.distributed.flat_gradients`` chooses between them.

    LIGHTNING_HPU_BACKEND=cpu LIGHTNING_HPU_CPU_DEVICES=2 python benchmarks/fast_ddp.py
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch
from lightning.pytorch import Callback, LightningModule, Trainer
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from lightning_hpu import HPUParallelStrategy

sys.path.insert(0, str(Path(__file__).resolve().parent))
import plots
from progress import progress
from step_counters import TensorAllocations

WIDTH_IN, WIDTH_HIDDEN = 1000, 800  # 2 x 800k weights + biases = 1.6 M fp32 parameters = 6.4 MB
BATCH = 16

CONFIGS: dict[str, dict[str, Any]] = {
    "ddp (Lightning defaults)": {"bucket_cap_mb": 25, "gradient_as_bucket_view": False},
    "ddp (Gaudi defaults)": {},
    "fast_ddp": {"fast_ddp": True},
    "fast_ddp bf16 wire": {"fast_ddp": True, "reduce_dtype": torch.bfloat16},
}


class MLP(LightningModule):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(WIDTH_IN, WIDTH_HIDDEN), nn.ReLU(), nn.Linear(WIDTH_HIDDEN, WIDTH_IN))

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        (x,) = batch
        return nn.functional.mse_loss(self.net(x), x)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.01)


class StepClock(Callback):
    """CPU and wall seconds per step over ``steps`` steps after ``warmup``, then allocations over ``count`` steps."""

    def __init__(self, warmup: int, steps: int, count: int = 2) -> None:
        self.warmup, self.steps, self.count = warmup, steps, count
        self.batches = 0
        self.cpu = self.wall = 0.0
        self.allocations: TensorAllocations | None = None

    def on_train_batch_start(self, trainer: Trainer, pl_module: LightningModule, batch: Any, batch_idx: int) -> None:
        if self.batches == self.warmup:
            self._cpu0, self._wall0 = time.process_time(), time.perf_counter()
        elif self.batches == self.warmup + self.steps:
            self.cpu = (time.process_time() - self._cpu0) / self.steps
            self.wall = (time.perf_counter() - self._wall0) / self.steps
            self.allocations = TensorAllocations()
            self.allocations.__enter__()
        elif self.batches == self.warmup + self.steps + self.count and self.allocations is not None:
            self.allocations.__exit__(None, None, None)
        self.batches += 1


def fit(strategy_kwargs: dict[str, Any], warmup: int, steps: int) -> StepClock:
    clock = StepClock(warmup, steps)
    samples = (warmup + steps + clock.count + 1) * BATCH
    data = DataLoader(TensorDataset(torch.randn(samples, WIDTH_IN)), batch_size=BATCH)
    trainer = Trainer(
        accelerator="hpu",
        devices=2,
        strategy=HPUParallelStrategy(**strategy_kwargs),
        max_steps=warmup + steps + clock.count + 1,
        callbacks=[clock],
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        use_distributed_sampler=False,
    )
    trainer.fit(MLP(), data)
    return clock


def time_packing(shapes: list[tuple[int, ...]], repeats: int = 100) -> tuple[float, float]:
    """Microseconds to fill a flat buffer with divided gradients: one ``div(out=)`` each, or two fused calls."""
    grads = [torch.randn(shape) for shape in shapes]
    flat = torch.empty(sum(g.numel() for g in grads))
    slices = [piece.view(g.shape) for piece, g in zip(flat.split([g.numel() for g in grads]), grads, strict=True)]

    def one_pass() -> None:
        for grad, piece in zip(grads, slices, strict=True):
            torch.div(grad, 2, out=piece)

    def fused() -> None:
        torch._foreach_copy_(slices, grads)
        flat.div_(2)

    times = []
    for fill in (one_pass, fused):
        fill()
        start = time.perf_counter()
        for _ in range(repeats):
            fill()
        times.append((time.perf_counter() - start) / repeats * 1e6)
    return times[0], times[1]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args(argv)
    results: dict[str, list[StepClock]] = {name: [] for name in CONFIGS}
    for round_number in range(1, args.rounds + 1):
        for name, kwargs in CONFIGS.items():
            progress(f"round {round_number}/{args.rounds}: {name}, {args.warmup} + {args.steps} steps...")
            results[name].append(fit(kwargs, args.warmup, args.steps))
    if int(torch.distributed.get_rank()) != 0:
        return
    base = statistics.median(clock.cpu for clock in results["ddp (Gaudi defaults)"])
    base_wall = statistics.median(clock.wall for clock in results["ddp (Gaudi defaults)"])
    print(f"6.4 MB model, 2 stand-in HPUs, median of {args.rounds} rounds x {args.steps} steps (rank 0)")
    header = f"{'CPU ms/step':>12} {'vs DDP':>7} {'wall ms/step':>13} {'vs DDP':>7} {'allocs/step':>12}"
    print(f"{'configuration':<26} {header}")
    for name, clocks in results.items():
        cpu = statistics.median(clock.cpu for clock in clocks)
        wall = statistics.median(clock.wall for clock in clocks)
        last = clocks[-1]
        allocs = last.allocations.total / last.count if last.allocations is not None else float("nan")
        print(
            f"{name:<26} {cpu * 1e3:>12.2f} {cpu / base:>6.2f}x {wall * 1e3:>13.2f} {wall / base_wall:>6.2f}x"
            f" {allocs:>12.1f}"
        )
    medians = {
        name: [statistics.median(getattr(c, kind) for c in clocks) * 1e3 for kind in ("cpu", "wall")]
        for name, clocks in results.items()
    }
    plots.bars(
        "fast_ddp",
        f"Fast DDP against DDP, 2 stand-in HPUs, rank 0, median of {args.rounds} rounds x {args.steps} steps",
        "ms per step",
        list(medians),
        {"CPU time": [m[0] for m in medians.values()], "wall time": [m[1] for m in medians.values()]},
    )
    print("filling the flat buffer (us):   one div(out=) per gradient | _foreach_copy_ + one division")
    model_shapes: list[tuple[int, ...]] = [p.shape for p in MLP().parameters()]
    small_shapes: list[tuple[int, ...]] = [(64, 64), (64,)] * 160
    for label, shapes in (("this model (4 tensors)", model_shapes), ("320 small tensors", small_shapes)):
        one_pass, fused = time_packing(shapes)
        print(f"  {label:<28} {one_pass:>10.0f} | {fused:>10.0f}")


if __name__ == "__main__":
    main()
