"""A long 2-rank training run for ``tests/lightning_hpu/pytorch/strategies/test_sigterm.py``: counts per steady step,
then waits for SIGTERM.

Every rank trains a small model with ``self.log(...)`` under ``STRATEGY``, saving a checkpoint every few steps. It
counts host syncs and collectives over a window of steady steps and writes them to ``<out>/counts<rank>.json``;
once it has counted and a checkpoint exists it writes its process id to ``<out>/ready<rank>`` and keeps training
(slowly) until a signal stops it. On the way out it writes the exit status it leaves with to ``<out>/exit<rank>``.

Usage: ``python sigterm_scenario.py OUT_DIR STRATEGY`` (with ``LIGHTNING_HPU_CPU_DEVICES=2``).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import torch
from lightning.pytorch import Callback, LightningModule, Trainer
from lightning.pytorch.callbacks import ModelCheckpoint
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from step_counters import CountSteadySteps

from tests.helpers.trainer import quiet_trainer

CHECKPOINT_EVERY = 10  # outside the counted window: saving formats its file name with `.item()`
STEP_SECONDS = 0.05  # each step sleeps this long, so the run lasts until it is signalled


class Model(LightningModule):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 1))

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x), y)
        self.log("loss", loss)
        time.sleep(STEP_SECONDS)
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.01)

    def train_dataloader(self) -> DataLoader:
        generator = torch.Generator().manual_seed(1)
        x = torch.randn(100_000, 16, generator=generator)
        return DataLoader(TensorDataset(x, x.sum(dim=1, keepdim=True)), batch_size=4)


class AnnounceReady(Callback):
    """Writes the counts, then this process's id once counting is over and a checkpoint was saved."""

    def __init__(self, out: Path, counter: CountSteadySteps) -> None:
        self.out = out
        self.counter = counter
        self.announced = False

    def on_train_batch_end(self, trainer: Trainer, *args: Any) -> None:
        if self.announced or self.counter.result is None or trainer.global_step < 2 * CHECKPOINT_EVERY:
            return
        rank = trainer.global_rank
        (self.out / f"counts{rank}.json").write_text(json.dumps(self.counter.result))
        (self.out / f"ready{rank}").write_text(str(os.getpid()))
        self.announced = True


def main() -> None:
    out, strategy = Path(sys.argv[1]), sys.argv[2]
    counter = CountSteadySteps(warmup=2, steps=6)
    checkpoints = ModelCheckpoint(
        dirpath=out / "checkpoints", every_n_train_steps=CHECKPOINT_EVERY, save_top_k=-1, filename="{step}"
    )
    trainer = quiet_trainer(
        str(out),
        accelerator="hpu",
        devices=2,
        strategy=strategy,
        max_steps=100_000,
        callbacks=[counter, AnnounceReady(out, counter), checkpoints],
    )
    status: Any = 0
    try:
        trainer.fit(Model())
    except SystemExit as exit_:
        status = exit_.code
        raise
    finally:
        (out / f"exit{trainer.global_rank}").write_text(str(status))


if __name__ == "__main__":
    main()
