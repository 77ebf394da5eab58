"""Train a small classifier on synthetic data on one HPU.

On a Gaudi:            .venv/bin/python examples/train_single_hpu.py
Without a Gaudi:       LIGHTNING_HPU_BACKEND=cpu .venv/bin/python examples/train_single_hpu.py

Logs and checkpoints go to ``lightning_logs/version_<n>/`` under ``--default-root-dir`` (the current directory).
"""

from __future__ import annotations

import argparse
from typing import Any

import torch
from lightning.pytorch import LightningModule, Trainer
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from lightning_hpu import HPUAccelerator, SingleHPUStrategy, run_script


def synthetic_classification(samples: int, features: int = 32, classes: int = 4, seed: int = 0) -> TensorDataset:
    """Points around one fixed centre per class (the same centres for every split); ``seed`` picks the points."""
    centres = torch.randn(classes, features, generator=torch.Generator().manual_seed(1234)) * 0.5
    generator = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, classes, (samples,), generator=generator)
    points = centres[labels] + torch.randn(samples, features, generator=generator)
    return TensorDataset(points, labels)


class Classifier(LightningModule):
    """A two-layer MLP; the batch size is fixed so lazy mode compiles one graph (drop_last=True)."""

    def __init__(self, features: int = 32, hidden: int = 64, classes: int = 4, lr: float = 0.05, batch_size: int = 32):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def _loss_and_accuracy(self, batch: Any) -> tuple[torch.Tensor, torch.Tensor]:
        x, y = batch
        logits = self(x)
        return nn.functional.cross_entropy(logits, y), (logits.argmax(dim=1) == y).float().mean()

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        loss, _ = self._loss_and_accuracy(batch)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        loss, accuracy = self._loss_and_accuracy(batch)
        self.log_dict({"val_loss": loss, "val_acc": accuracy}, prog_bar=True)

    def test_step(self, batch: Any, batch_idx: int) -> None:
        loss, accuracy = self._loss_and_accuracy(batch)
        self.log_dict({"test_loss": loss, "test_acc": accuracy})

    def predict_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        return self(batch[0]).argmax(dim=1)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.9)

    def _loader(self, samples: int, seed: int) -> DataLoader:
        return DataLoader(
            synthetic_classification(samples, self.hparams.features, self.hparams.classes, seed),
            batch_size=self.hparams.batch_size,
            drop_last=True,
            pin_memory=False,
        )

    def train_dataloader(self) -> DataLoader:
        return self._loader(1024, seed=0)

    def val_dataloader(self) -> DataLoader:
        return self._loader(256, seed=1)

    def test_dataloader(self) -> DataLoader:
        return self._loader(256, seed=1)

    def predict_dataloader(self) -> DataLoader:
        return self._loader(64, seed=2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-epochs", type=int, default=3)
    parser.add_argument("--precision", default="bf16-mixed", help="32-true, bf16-mixed, ...")
    parser.add_argument("--default-root-dir", default=".", help="the directory that gets lightning_logs/")
    args = parser.parse_args()

    torch.manual_seed(0)
    model = Classifier()
    trainer = Trainer(
        accelerator=HPUAccelerator(),
        strategy=SingleHPUStrategy(),
        devices=1,
        precision=args.precision,
        max_epochs=args.max_epochs,
        default_root_dir=args.default_root_dir,
        log_every_n_steps=10,
        enable_progress_bar=False,
    )
    trainer.fit(model)
    (results,) = trainer.test(model, verbose=False)
    predictions = trainer.predict(model)
    assert predictions is not None
    print(
        f"test_loss={results['test_loss']:.4f} test_acc={results['test_acc']:.3f}"
        f" predictions={sum(len(p) for p in predictions)} checkpoint={trainer.checkpoint_callback.best_model_path}"  # type: ignore[union-attr]
    )


if __name__ == "__main__":
    run_script(main)
