"""Throughput and model FLOPs utilisation (MFU) of a training run, against the Gaudi's peak FLOPs.

The LightningModule's ``flops_per_batch`` (measured once with Lightning's ``measure_flops``) is divided by the step
time and by the peak of the device generation and precision (Gaudi2 bf16: 432 TFLOPS). On the CPU stand-in the
emulated generation picks the peak, so the printed MFU means nothing there: it divides the CPU's FLOPs by a Gaudi's.

On a Gaudi:        python examples/throughput_mfu.py
Without a Gaudi:   LIGHTNING_HPU_BACKEND=cpu python examples/throughput_mfu.py [--available-flops 1e12]
"""

from __future__ import annotations

import argparse
from typing import Any

import torch
from lightning.fabric.utilities.throughput import measure_flops
from lightning.pytorch import LightningModule, Trainer
from lightning.pytorch.loggers import CSVLogger
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from lightning_hpu import HPUThroughputMonitor, run_script

BATCH, FEATURES = 32, 256


class MLP(LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(FEATURES, 1024), nn.GELU(), nn.Linear(1024, FEATURES))
        with torch.device("meta"):
            meta = nn.Sequential(nn.Linear(FEATURES, 1024), nn.GELU(), nn.Linear(1024, FEATURES))
            x = torch.randn(BATCH, FEATURES)
            self.flops_per_batch = measure_flops(meta, lambda: meta(x), loss_fn=torch.Tensor.sum)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        (x,) = batch
        return nn.functional.mse_loss(self.net(x), x)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.01)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--available-flops", type=float, default=None, help="override the table's peak")
    parser.add_argument("--precision", default="bf16-mixed")
    args = parser.parse_args()

    monitor = HPUThroughputMonitor(
        batch_size_fn=lambda batch: batch[0].shape[0], window_size=5, available_flops=args.available_flops
    )
    data = TensorDataset(torch.randn(BATCH * 20, FEATURES, generator=torch.Generator().manual_seed(0)))
    trainer = Trainer(
        accelerator="hpu",
        precision=args.precision,
        max_epochs=1,
        callbacks=[monitor],
        logger=CSVLogger("lightning_logs", name="throughput_mfu"),
        log_every_n_steps=1,
        enable_checkpointing=False,
        enable_progress_bar=False,
    )
    trainer.fit(MLP(), DataLoader(data, batch_size=BATCH))
    metrics = trainer.logged_metrics
    print(f"FLOPs per batch: {MLP().flops_per_batch:.3g}; peak used: {monitor.available_flops}")
    for key in ("train/device/flops_per_sec", "train/device/mfu"):
        if key in metrics:
            print(f"{key}: {float(metrics[key]):.3g}")


if __name__ == "__main__":
    run_script(main)
