"""Host syncs and collectives per steady training step, for every HPU parallel strategy, on 2 stand-in HPUs.

Each strategy trains a small model whose ``training_step`` calls ``self.log("loss", loss)``; the counters of
``step_counters.py`` watch 6 steady steps on every rank. Lightning's own ``ddp`` on the CPU is run too, as the
baseline: it broadcasts a SIGTERM flag and reads it back with ``.item()`` every step. Under the HPU strategies the
loop adds no host sync and no device collective: what is left is the gradient reduction (DDP's bucket all-reduce,
fast DDP's flat all-reduce) and, under DeepSpeed, what its ZeRO optimizer step does by itself (gradient
all-reduces, the all-gather of the updated partitions, and ``bool()`` of its gradient-norm overflow check). SIGTERM
is agreed on by one asynchronous vote per step on a host-side gloo group.

    LIGHTNING_HPU_BACKEND=cpu python benchmarks/step_syncs.py
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch
from lightning.pytorch import LightningModule, Trainer
from lightning.pytorch.strategies import StrategyRegistry
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

sys.path.insert(0, str(Path(__file__).resolve().parent))
from progress import progress
from step_counters import CountSteadySteps

import lightning_hpu  # noqa: F401  (registers the HPU strategies)

#: (label, accelerator, strategy); FSDP strategies are added when this lightning-hpu has them.
RUNS = [
    ("Lightning ddp (CPU)", "cpu", "ddp"),
    ("hpu_parallel", "hpu", "hpu_parallel"),
    ("hpu_fast_ddp", "hpu", "hpu_fast_ddp"),
    ("hpu_deepspeed (ZeRO-1)", "hpu", "hpu_deepspeed_stage_1"),
]
OPTIONAL_RUNS = [("hpu_fsdp", "hpu", "hpu_fsdp")]


class Model(LightningModule):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 1))

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x), y)
        self.log("loss", loss)
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.01)

    def train_dataloader(self) -> DataLoader:
        x = torch.randn(512, 32, generator=torch.Generator().manual_seed(0))
        return DataLoader(TensorDataset(x, x.sum(dim=1, keepdim=True)), batch_size=8)


def run_worker(accelerator: str, strategy: str, out: Path) -> None:
    """One rank of one strategy's run: counts per steady step, written to ``out/rank<r>.json``."""
    counter = CountSteadySteps(warmup=3, steps=6)
    trainer = Trainer(
        accelerator=accelerator,
        devices=2,
        strategy=strategy,
        max_steps=12,
        callbacks=[counter],
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(Model())
    (out / f"rank{trainer.global_rank}.json").write_text(json.dumps(counter.result))


def _summary(counts: dict[str, float]) -> tuple[float, float, float, float, float]:
    syncs = sum(value for key, value in counts.items() if key.startswith("sync:"))
    broadcasts = counts.get("dist:broadcast", 0.0) + counts.get("device:broadcast", 0.0)
    device = sum(value for key, value in counts.items() if key.startswith("device:"))
    python_collectives = sum(value for key, value in counts.items() if key.startswith("dist:"))
    return syncs, broadcasts, device, python_collectives, counts.get("host:sigterm_vote", 0.0)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", nargs=3, metavar=("ACCELERATOR", "STRATEGY", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        accelerator, strategy, out = args.worker
        run_worker(accelerator, strategy, Path(out))
        return
    runs = RUNS + [run for run in OPTIONAL_RUNS if run[2] in StrategyRegistry]
    env = {**os.environ, "LIGHTNING_HPU_BACKEND": "cpu", "LIGHTNING_HPU_CPU_DEVICES": "2"}
    env.setdefault("TORCH_EXTENSIONS_DIR", str(Path(__file__).resolve().parents[1] / "build" / "torch_extensions"))
    print("per steady step (6 steps, both ranks), training_step with self.log('loss', loss):")
    header = f"{'host syncs':>10} {'broadcasts':>10} {'device collectives':>18} {'dist.* calls':>12} {'host votes':>10}"
    print(f"{'strategy':<24} {'rank':>4} {header}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for number, (label, accelerator, strategy) in enumerate(runs, start=1):
            progress(f"{number}/{len(runs)}: training {label} on 2 processes (about 20-30 s each)...")
            out = Path(tmp) / strategy
            out.mkdir()
            command = [sys.executable, __file__, "--worker", accelerator, strategy, str(out)]
            done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
            if done.returncode != 0:
                print(f"{label:<24} failed:\n{done.stdout[-1500:]}{done.stderr[-3000:]}")
                continue
            for rank in (0, 1):
                counts = json.loads((out / f"rank{rank}.json").read_text())
                syncs, broadcasts, device, python_collectives, votes = _summary(counts)
                print(
                    f"{label:<24} {rank:>4} {syncs:>10.1f} {broadcasts:>10.1f} {device:>18.1f}"
                    f" {python_collectives:>12.1f} {votes:>10.1f}   {counts}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
