"""LitData streaming and torchmetrics on stand-in HPUs, as a user writes them (no lightning_hpu import):
``python lit_data_metrics_scenario.py trainer|fabric DATA OUT [--devices N --num-nodes M]``.

``trainer``: a DDP fit whose ``train_dataloader()`` builds LitData's ``StreamingDataset`` (as LitGPT's data modules
do); each rank writes the sample indices it read and the value of a ``torchmetrics.SumMetric`` of them, synced over
the ranks, to ``OUT/trainer-<rank>.json``. ``fabric``: Fabric's DDP, each rank updates a ``MeanMetric`` and a
``MaxMetric`` with its own values and writes their synced values to ``OUT/fabric-<rank>.json``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
import torchmetrics
from lightning.fabric import Fabric
from lightning.pytorch import LightningModule, Trainer
from litdata import StreamingDataLoader, StreamingDataset


def write_dataset(directory: Path, samples: int) -> None:
    """``samples`` items ``{"index": i}`` in LitData's chunked format (4 a chunk), written in this process."""
    from litdata.streaming.writer import BinaryWriter

    writer = BinaryWriter(str(directory), chunk_size=4)
    for index in range(samples):
        writer[index] = {"index": index}
    writer.done()
    writer.merge()


class Reader(LightningModule):
    def __init__(self, data: str, out: str) -> None:
        super().__init__()
        self.data, self.out = data, out
        self.layer = torch.nn.Linear(1, 1)
        self.total = torchmetrics.SumMetric()
        self.seen: list[int] = []

    def train_dataloader(self) -> StreamingDataLoader:
        return StreamingDataLoader(StreamingDataset(self.data, shuffle=False), batch_size=2)

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        indices = batch["index"]
        self.seen += indices.tolist()
        self.total.update(indices.to(self.device).float())
        return self.layer(indices.to(self.device).float().unsqueeze(1)).sum()

    def on_train_epoch_end(self) -> None:
        total = float(self.total.compute())  # synced over every rank
        report = {"seen": self.seen, "total": total, "device": str(self.device)}
        Path(self.out, f"trainer-{self.global_rank}.json").write_text(json.dumps(report))

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.0)


def fabric_run(out: str, devices: int) -> None:
    fabric = Fabric(accelerator="hpu", devices=devices)
    fabric.launch()
    mean, largest = torchmetrics.MeanMetric().to(fabric.device), torchmetrics.MaxMetric().to(fabric.device)
    values = torch.arange(4, dtype=torch.float32, device=fabric.device) + 10 * fabric.global_rank
    mean.update(values)
    largest.update(values)
    report = {"mean": float(mean.compute()), "max": float(largest.compute()), "device": str(fabric.device)}
    Path(out, f"fabric-{fabric.global_rank}.json").write_text(json.dumps(report))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["trainer", "fabric"])
    parser.add_argument("data")
    parser.add_argument("out")
    parser.add_argument("--devices", type=int, default=2)
    parser.add_argument("--num-nodes", type=int, default=1)
    args = parser.parse_args()
    if args.mode == "fabric":
        fabric_run(args.out, args.devices)
    else:
        trainer = Trainer(accelerator="hpu", devices=args.devices, num_nodes=args.num_nodes, max_epochs=1,
                          logger=False, enable_checkpointing=False, enable_progress_bar=False,
                          enable_model_summary=False)  # fmt: skip
        trainer.fit(Reader(args.data, args.out))
