"""Keep compiled graph recipes on disk across runs: run this twice with the same ``--cache``.

The first run compiles a recipe for every graph and input shape and stores it in ``--cache``; the second loads them
and compiles none. ``--width`` changes the model, whose graphs are then compiled again.

On a Gaudi:        python examples/recipe_cache.py --cache /tmp/recipe_cache   (twice)
Without a Gaudi:   LIGHTNING_HPU_BACKEND=cpu python examples/recipe_cache.py --cache /tmp/recipe_cache
Legacy lazy mode:  PT_HPU_LAZY_MODE=1 ... python examples/recipe_cache.py --cache /tmp/recipe_cache_lazy
"""

from __future__ import annotations

import argparse
from typing import Any

import torch
from lightning.pytorch import LightningModule, Trainer
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from lightning_hpu import HPUAccelerator, HPUCompile, HPURecompileMonitor, RecipeCache, run_script


class Regressor(LightningModule):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, width), nn.Tanh(), nn.Linear(width, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        return nn.functional.mse_loss(self(x), y)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", default="lightning_logs/recipe_cache", help="the recipe cache directory (shared)")
    parser.add_argument("--width", type=int, default=32, help="another width is another model")
    parser.add_argument("--delete-at-start", action="store_true", help="empty the cache first")
    args = parser.parse_args()

    accelerator = HPUAccelerator(recipe_cache=RecipeCache(args.cache, delete_at_start=args.delete_at_start))
    # The bridge's own count of the recipes its graph compiler builds (the same call on a Gaudi and on the stand-in).
    from habana_frameworks.torch.hpu.metrics import metric_global

    compilations = metric_global("graph_compilation")
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(40, 8, generator=generator)
    loader = DataLoader(TensorDataset(x, x.sum(1, keepdim=True)), batch_size=16)  # batches of 16, 16 and 8
    monitor = HPURecompileMonitor(warmup_steps=10)
    # Eager mode compiles with torch.compile; lazy mode (PT_HPU_LAZY_MODE=1) compiles the graphs between mark_steps.
    compile_callbacks = [] if HPUAccelerator.is_lazy() else [HPUCompile(dynamic=False)]
    trainer = Trainer(
        accelerator=accelerator,
        max_epochs=2,
        callbacks=[*compile_callbacks, monitor],
        enable_checkpointing=False,
        logger=False,
        enable_progress_bar=False,
    )
    trainer.fit(Regressor(args.width), loader)
    if compilations is not None:
        print(f"device recipes compiled in this run: {dict(compilations.stats())['TotalNumber']}")
    # In lazy mode the monitor counts the device's compilations; in eager mode TorchDynamo's, which traces again in
    # every new process whether or not the device's recipes are cached.
    print(f"compilations counted by HPURecompileMonitor: {monitor.total}")


if __name__ == "__main__":
    run_script(main)
