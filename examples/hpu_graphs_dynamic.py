"""Dynamic models: graph the static parts, keep control flow and dynamic ops outside the graphs.

A graph freezes Python control flow (the branch taken at capture is taken at every replay) and cannot contain ops
whose output shape depends on values. So the model is split: ``encoder``, ``left`` and ``right`` are each wrapped
with ``ModuleCacher``; the choice between ``left`` and ``right`` and the boolean-mask selection run eagerly between
them, as in the Gaudi documentation's split-module pattern.

    LIGHTNING_HPU_BACKEND=cpu python examples/hpu_graphs_dynamic.py --max-epochs 1
"""

from __future__ import annotations

import argparse
import os
import random

import torch
import torch.nn.functional as F
from lightning.pytorch import LightningModule, Trainer
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from lightning_hpu import HPUAccelerator, mark_step, run_script
from lightning_hpu.hpu_graphs import ModuleCacher

# HPU graphs exist in lazy mode only; current Gaudi software runs eager unless PT_HPU_LAZY_MODE=1. The bridge reads
# the variable when it is first imported, which the package does on first use, after this line.
os.environ.setdefault("PT_HPU_LAZY_MODE", "1")


class DynamicModel(LightningModule):
    def __init__(self, max_graphs: int) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(32, 64), nn.ReLU())
        self.left = nn.Linear(64, 4)
        self.right = nn.Sequential(nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 4))
        for module in (self.encoder, self.left, self.right):
            ModuleCacher(max_graphs)(model=module, inplace=True)

    def training_step(self, batch, batch_idx):  # type: ignore[no-untyped-def]
        x, y = batch
        hidden = self.encoder(x)  # a graph
        head = self.left if random.random() > 0.5 else self.right  # dynamic control flow: eager
        logits = head(hidden)  # a graph per head
        # Dynamic op: the selected rows depend on values, so this runs eagerly between graphs.
        mark_step()
        confident = logits.max(dim=1).values > 0
        extra = logits[confident].pow(2).mean() if bool(confident.any()) else logits.sum() * 0
        mark_step()
        loss = F.cross_entropy(logits, y) + 0.01 * extra
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.05)


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--max-epochs", type=int, default=2)
    parser.add_argument("--samples", type=int, default=512)
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    random.seed(0)
    x = torch.randn(args.samples, 32)
    loader = DataLoader(TensorDataset(x, x[:, :4].argmax(dim=1)), batch_size=32, drop_last=True)
    model = DynamicModel(max_graphs=2)
    trainer = Trainer(
        accelerator=HPUAccelerator(), devices=1, max_epochs=args.max_epochs, logger=False, enable_checkpointing=False
    )
    trainer.fit(model, loader)
    metrics = {k: float(v) for k, v in trainer.callback_metrics.items()}
    print(metrics)
    return metrics


if __name__ == "__main__":
    run_script(main)
