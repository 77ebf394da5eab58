"""Inference with ``wrap_in_hpu_graph``: one graph per input shape, captured on first use and replayed after.

LIGHTNING_HPU_BACKEND=cpu python examples/hpu_graphs_inference.py --batches 4
"""

from __future__ import annotations

import argparse
import os

import torch
import torch.nn.functional as F
from lightning.pytorch import LightningModule, Trainer
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from lightning_hpu import HPUAccelerator, run_script
from lightning_hpu.hpu_graphs import wrap_in_hpu_graph

# HPU graphs exist in lazy mode only; current Gaudi software runs eager unless PT_HPU_LAZY_MODE=1. The bridge reads
# the variable when it is first imported, which the package does on first use, after this line.
os.environ.setdefault("PT_HPU_LAZY_MODE", "1")


class Net(LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def test_step(self, batch, batch_idx):  # type: ignore[no-untyped-def]
        x, y = batch
        logits = self(x)
        self.log("test_loss", F.cross_entropy(logits, y))
        self.log("test_acc", (logits.argmax(dim=1) == y).float().mean())

    def predict_step(self, batch, batch_idx):  # type: ignore[no-untyped-def]
        # The graph writes every replay into the same output tensor: keep a copy of what you collect.
        return self(batch[0]).argmax(dim=1).clone()


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batches", type=int, default=16)
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    x = torch.randn(args.batches * 16, 32)
    loader = DataLoader(TensorDataset(x, x[:, :4].argmax(dim=1)), batch_size=16)
    model = Net()
    wrap_in_hpu_graph(model, disable_tensor_cache=True, max_graphs=4)
    trainer = Trainer(accelerator=HPUAccelerator(), devices=1, logger=False)
    metrics = trainer.test(model, loader)[0]
    predictions = trainer.predict(model, loader)
    assert predictions is not None
    print(metrics, "predicted", sum(len(p) for p in predictions), "samples")  # type: ignore[arg-type]
    model.clear_cache()  # free the graphs' memory
    return metrics


if __name__ == "__main__":
    run_script(main)
