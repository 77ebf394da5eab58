"""Per-step host time of ``Trainer(accelerator="hpu")`` against ``Trainer(accelerator="cpu")`` and a raw PyTorch loop.

On the stand-in the HPU is the CPU, so the difference between the two Trainers is what lightning-hpu adds to every
step (its strategy, precision plugin and loop integration); the raw loop shows what Lightning itself costs. A small
MLP keeps the step host bound, so the overhead is not hidden behind compute. The three run in turn, several rounds
(so machine load hits them alike); the medians of CPU time and wall time per step are printed with their ratios.

    LIGHTNING_HPU_BACKEND=cpu python benchmarks/step_overhead.py
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import plots
import torch
from lightning.pytorch import Callback, LightningModule, Trainer
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import lightning_hpu  # noqa: F401  (registers accelerator="hpu")

WIDTH, BATCH = 64, 32
Clock = Callable[[], float]


class MLP(LightningModule):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.ReLU(), nn.Linear(WIDTH, 1))

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x), y)
        self.log("loss", loss)
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.01)


def _data(steps: int) -> DataLoader:
    x = torch.randn(steps * BATCH, WIDTH, generator=torch.Generator().manual_seed(0))
    return DataLoader(TensorDataset(x, x.sum(dim=1, keepdim=True)), batch_size=BATCH)


class StepClock(Callback):
    """CPU and wall seconds per step, from the start of batch ``warmup`` to the start of batch ``warmup + steps``."""

    def __init__(self, warmup: int, steps: int) -> None:
        self.warmup, self.steps, self.batches = warmup, steps, 0
        self.cpu = self.wall = 0.0

    def on_train_batch_start(self, trainer: Trainer, pl_module: LightningModule, batch: Any, batch_idx: int) -> None:
        if self.batches == self.warmup:
            self._cpu0, self._wall0 = time.process_time(), time.perf_counter()
        elif self.batches == self.warmup + self.steps:
            self.cpu = (time.process_time() - self._cpu0) / self.steps
            self.wall = (time.perf_counter() - self._wall0) / self.steps
        self.batches += 1


def trainer_step(accelerator: str, warmup: int, steps: int) -> tuple[float, float]:
    clock = StepClock(warmup, steps)
    trainer = Trainer(
        accelerator=accelerator,
        devices=1,
        max_steps=warmup + steps + 1,
        callbacks=[clock],
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(MLP(), _data(warmup + steps + 1))
    return clock.cpu, clock.wall


def raw_step(warmup: int, steps: int) -> tuple[float, float]:
    model = MLP()
    optimizer = model.configure_optimizers()
    cpu0 = wall0 = 0.0
    for index, (x, y) in enumerate(_data(warmup + steps)):
        if index == warmup:
            cpu0, wall0 = time.process_time(), time.perf_counter()
        optimizer.zero_grad()
        nn.functional.mse_loss(model.net(x), y).backward()
        optimizer.step()
    return (time.process_time() - cpu0) / steps, (time.perf_counter() - wall0) / steps


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (fewer threads, less noise)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    runs: dict[str, Callable[[], tuple[float, float]]] = {
        'Trainer(accelerator="hpu")': lambda: trainer_step("hpu", args.warmup, args.steps),
        'Trainer(accelerator="cpu")': lambda: trainer_step("cpu", args.warmup, args.steps),
        "raw PyTorch loop": lambda: raw_step(args.warmup, args.steps),
    }
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
    for _ in range(args.rounds):
        for name, run in runs.items():
            times[name].append(run())
    cpu = {name: statistics.median(t[0] for t in samples) for name, samples in times.items()}
    wall = {name: statistics.median(t[1] for t in samples) for name, samples in times.items()}
    base = 'Trainer(accelerator="cpu")'
    print(f"median of {args.rounds} rounds x {args.steps} steps (MLP width {WIDTH}, batch {BATCH}, self.log each step)")
    print(f"{'':<28} {'CPU us/step':>12} {'vs cpu':>7} {'wall us/step':>13} {'vs cpu':>7}")
    for name in runs:
        print(
            f"{name:<28} {cpu[name] * 1e6:>12.0f} {cpu[name] / cpu[base]:>6.3f}x"
            f" {wall[name] * 1e6:>13.0f} {wall[name] / wall[base]:>6.3f}x"
        )
    plots.bars(
        "step_overhead",
        f"Per-step host time, one device, median of {args.rounds} rounds x {args.steps} steps",
        "µs per step",
        list(runs),
        {"CPU time": [cpu[name] * 1e6 for name in runs], "wall time": [wall[name] * 1e6 for name in runs]},
    )


if __name__ == "__main__":
    main()
