"""A script written for a Gaudi, as Intel's docs write them, that also runs unchanged on the CPU stand-in.

It imports ``habana_frameworks`` first, asks ``torch.hpu`` about the device, makes tensors with ``device="hpu"``,
trains with Habana's ``FusedAdamW`` under ``torch.autocast(device_type="hpu")`` in ``Trainer(accelerator="hpu")``,
and in lazy mode serves predictions from an HPU graph (``wrap_in_hpu_graph``). Nothing in it names the stand-in:

    LIGHTNING_HPU_BACKEND=cpu .venv/bin/python examples/gaudi_script.py                     # eager
    LIGHTNING_HPU_BACKEND=cpu PT_HPU_LAZY_MODE=1 .venv/bin/python examples/gaudi_script.py  # lazy, with a graph

On a Gaudi, run it without ``LIGHTNING_HPU_BACKEND``.
"""

import habana_frameworks.torch.core as htcore  # noqa: I001 (first, as Gaudi scripts do)

from typing import Any

import torch
import torch.nn.functional as F
from habana_frameworks.torch.hpex.optimizers import FusedAdamW
from lightning.pytorch import LightningModule, Trainer
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from lightning_hpu import run_script

FEATURES, CLASSES, BATCH = 16, 4, 8


class Classifier(LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU(), nn.Linear(32, CLASSES))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        with torch.autocast(device_type="hpu", dtype=torch.bfloat16):
            loss = F.cross_entropy(self(x), y)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return FusedAdamW(self.parameters(), lr=0.01)


def main() -> None:
    assert torch.hpu.is_available()
    print(f"device: {torch.hpu.get_device_name()}, lazy mode: {htcore.is_lazy()}")
    torch.manual_seed(0)
    x = torch.randn(64, FEATURES, device="hpu")
    y = x[:, :CLASSES].argmax(dim=1)
    model = Classifier().to("hpu")
    trainer = Trainer(accelerator="hpu", devices=1, max_epochs=2, logger=False, enable_checkpointing=False)
    trainer.fit(model, DataLoader(TensorDataset(x, y), batch_size=BATCH, drop_last=True))
    print(f"train_loss: {float(trainer.callback_metrics['train_loss']):.4f}")

    model = model.to("hpu").eval()  # Lightning's teardown moved it back to the host
    if htcore.is_lazy():  # HPU graphs exist in lazy mode only
        model = torch.hpu.wrap_in_hpu_graph(model)
    with torch.no_grad():
        for batch in x.split(BATCH):
            predictions = model(batch).argmax(dim=1)
            htcore.mark_step()
    print(f"last batch predicted: {predictions.tolist()}")


if __name__ == "__main__":
    run_script(main)
