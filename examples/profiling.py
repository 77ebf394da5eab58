"""Profile a short training run with HPUProfiler: per-rank traces for TensorBoard or Chrome, and a summary.

On a Gaudi:            .venv/bin/python examples/profiling.py
On the CPU stand-in:   LIGHTNING_HPU_BACKEND=cpu .venv/bin/python examples/profiling.py
Several processes:     .venv/bin/python examples/profiling.py --devices 8   (on a Gaudi node)

The profiler logs where it wrote the report and the traces (``profiler_logs/`` by default). Open the traces with
``.venv/bin/tensorboard --logdir profiler_logs`` (the ``profiler`` extra, which ``scripts/setup.sh`` installs), or
load a ``*.pt.trace.json`` file in chrome://tracing or https://ui.perfetto.dev.
"""

from __future__ import annotations

import argparse

import torch
from lightning.pytorch import LightningModule, Trainer
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from lightning_hpu import HPUProfiler, run_script


class MatmulModel(LightningModule):
    """A model whose cost is one large matrix multiply, with two custom profiled actions."""

    def __init__(self, profiler: HPUProfiler, width: int = 1024) -> None:
        super().__init__()
        self.profiler = profiler
        self.layer = nn.Linear(width, width)

    def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
        (x,) = batch
        with self.profiler.profile("my_custom_action"):
            y = self.layer(x)
        self.profiler.start("my_granular_action")
        loss = y.pow(2).mean()
        self.profiler.stop("my_granular_action")
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.01)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dirpath", default="profiler_logs", help="where the reports and traces go")
    parser.add_argument("--max-steps", type=int, default=10)
    parser.add_argument("--accelerator", default="hpu")
    parser.add_argument("--devices", type=int, default=1)
    parser.add_argument("--num-nodes", type=int, default=1)
    parser.add_argument("--strategy", default="auto")
    parser.add_argument("--width", type=int, default=1024, help="features of the one linear layer")
    parser.add_argument("--batch-size", type=int, default=256)
    args = parser.parse_args(argv)

    profiler = HPUProfiler(dirpath=args.dirpath, filename="perf-logs")
    trainer = Trainer(
        accelerator=args.accelerator,
        devices=args.devices,
        num_nodes=args.num_nodes,
        strategy=args.strategy,
        max_steps=args.max_steps,
        profiler=profiler,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    data = TensorDataset(torch.randn(8 * args.batch_size, args.width))
    trainer.fit(MatmulModel(profiler, args.width), DataLoader(data, batch_size=args.batch_size))


if __name__ == "__main__":
    run_script(main)
