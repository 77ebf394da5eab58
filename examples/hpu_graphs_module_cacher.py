"""Training with HPU graphs without rewriting the model: ModuleCacher by hand, or the HPUGraphs switch.

``--way cacher`` wraps the network with ``ModuleCacher(max_graphs)`` (one forward+backward graph per input shape);
``--way switch`` leaves the module untouched and adds ``HPUGraphs()`` to the Trainer, which also graphs validation.
The last batch is smaller, so two graphs are cached per mode.

    LIGHTNING_HPU_BACKEND=cpu python examples/hpu_graphs_module_cacher.py --way switch --max-epochs 1
"""

from __future__ import annotations

import argparse
import os

import torch
import torch.nn.functional as F
from lightning.pytorch import LightningModule, Trainer
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from lightning_hpu import HPUAccelerator, HPUGraphs, ModuleCacher, run_script

# HPU graphs exist in lazy mode only; current Gaudi software runs eager unless PT_HPU_LAZY_MODE=1. The bridge reads
# the variable when it is first imported, which the package does on first use, after this line.
os.environ.setdefault("PT_HPU_LAZY_MODE", "1")


class Classifier(LightningModule):
    def __init__(self, use_cacher: bool, max_graphs: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
        if use_cacher:
            ModuleCacher(max_graphs)(model=self.net, inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def training_step(self, batch, batch_idx):  # type: ignore[no-untyped-def]
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx):  # type: ignore[no-untyped-def]
        x, y = batch
        self.log("val_loss", F.cross_entropy(self(x), y), prog_bar=True)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.1)


def data(samples: int) -> DataLoader:
    x = torch.randn(samples, 32)
    y = x[:, :4].argmax(dim=1)
    return DataLoader(TensorDataset(x, y), batch_size=32)


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--way", choices=("cacher", "switch"), default="switch")
    parser.add_argument("--max-epochs", type=int, default=3)
    parser.add_argument("--max-graphs", type=int, default=4)
    parser.add_argument("--samples", type=int, default=500)
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    model = Classifier(use_cacher=args.way == "cacher", max_graphs=args.max_graphs)
    callbacks = [HPUGraphs(max_graphs=args.max_graphs)] if args.way == "switch" else []
    trainer = Trainer(
        accelerator=HPUAccelerator(),
        devices=1,
        max_epochs=args.max_epochs,
        callbacks=callbacks,
        logger=False,
        enable_checkpointing=False,
    )
    trainer.fit(model, data(args.samples), data(args.samples // 4))
    metrics = {k: float(v) for k, v in trainer.callback_metrics.items()}
    print(metrics)
    return metrics


if __name__ == "__main__":
    run_script(main)
