"""Manual HPU graph capture and replay in a LightningModule (training and test), as in the Gaudi docs.

The first training step captures forward, backward and optimizer step into one graph; every later step copies its
batch into the static input buffers and replays the graph. The test loop does the same for the forward pass.

Run on a Gaudi as is, or anywhere with the CPU stand-in:
    LIGHTNING_HPU_BACKEND=cpu python examples/hpu_graphs_capture_replay.py --max-epochs 1
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
from lightning_hpu.hpu_graphs import HPUGraph, graph

# HPU graphs exist in lazy mode only; current Gaudi software runs eager unless PT_HPU_LAZY_MODE=1. The bridge reads
# the variable when it is first imported, which the package does on first use, after this line.
os.environ.setdefault("PT_HPU_LAZY_MODE", "1")

BATCH, FEATURES, CLASSES = 16, 32, 4


class CaptureReplayModel(LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(FEATURES, 64), nn.ReLU(), nn.Linear(64, CLASSES))
        self.automatic_optimization = False
        self.train_graph: HPUGraph | None = None
        self.test_graph: HPUGraph | None = None
        # Static buffers: the graph reads its inputs from them and leaves its results in static_loss.
        self.static_input = torch.zeros(BATCH, FEATURES)
        self.static_target = torch.zeros(BATCH, dtype=torch.long)
        self.static_loss: torch.Tensor | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def on_fit_start(self) -> None:
        self.static_input = self.static_input.to(self.device)
        self.static_target = self.static_target.to(self.device)

    on_test_start = on_fit_start

    def training_step(self, batch, batch_idx):  # type: ignore[no-untyped-def]
        data, target = batch
        self.static_input.copy_(data)
        self.static_target.copy_(target)
        if self.train_graph is None:
            optimizer = self.optimizers()
            optimizer.zero_grad(set_to_none=True)
            self.train_graph = HPUGraph()
            # Captured once (and computed): forward, backward and the optimizer's in-place parameter update.
            with graph(self.train_graph):
                self.static_loss = F.cross_entropy(self(self.static_input), self.static_target)
                self.static_loss.backward()
                optimizer.step()
        else:
            self.train_graph.replay()
        self.log("train_loss", self.static_loss, prog_bar=True)
        return self.static_loss

    def test_step(self, batch, batch_idx):  # type: ignore[no-untyped-def]
        data, target = batch
        self.static_input.copy_(data)
        self.static_target.copy_(target)
        if self.test_graph is None:
            self.test_graph = HPUGraph()
            with graph(self.test_graph):
                self.static_loss = F.cross_entropy(self(self.static_input), self.static_target)
        else:
            self.test_graph.replay()
        self.log("test_loss", self.static_loss)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        # SGD keeps no Python-created state: Adam's step counter would be read on the host inside the graph.
        return torch.optim.SGD(self.parameters(), lr=0.1)


def data(samples: int) -> DataLoader:
    x = torch.randn(samples, FEATURES)
    y = (x[:, :CLASSES].argmax(dim=1)).long()
    # drop_last: a graph has static shapes, every batch must match the static buffers.
    return DataLoader(TensorDataset(x, y), batch_size=BATCH, drop_last=True)


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--max-epochs", type=int, default=3)
    parser.add_argument("--samples", type=int, default=512)
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    model = CaptureReplayModel()
    trainer = Trainer(
        accelerator=HPUAccelerator(), devices=1, max_epochs=args.max_epochs, logger=False, enable_checkpointing=False
    )
    trainer.fit(model, data(args.samples))
    trainer.test(model, data(args.samples // 4))
    metrics = {k: float(v) for k, v in trainer.callback_metrics.items()}
    print(metrics)
    return metrics


if __name__ == "__main__":
    run_script(main)
