"""Small models and data shared by the tests (the suite's model zoo)."""

from __future__ import annotations

from typing import Any

import torch
from lightning.pytorch import LightningModule
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def regression_data(samples: int = 64, features: int = 8, seed: int = 0) -> TensorDataset:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(samples, features, generator=generator)
    w = torch.randn(features, 1, generator=generator)
    return TensorDataset(x, x @ w + 0.1)


class RegressionModel(LightningModule):
    """A linear regression with deterministic data, for training equivalence checks."""

    def __init__(self, features: int = 8, lr: float = 0.1, batch_size: int = 8) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.layer = nn.Linear(features, 1)
        self.lr = lr
        self.batch_size = batch_size

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(x)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        loss = nn.functional.mse_loss(self(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        loss = nn.functional.mse_loss(self(x), y)
        self.log("val_loss", loss)
        return loss

    def test_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        return self.validation_step(batch, batch_idx)

    def predict_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        return self(batch[0])

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=self.lr)

    def train_dataloader(self) -> DataLoader:
        return DataLoader(regression_data(), batch_size=self.batch_size)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(regression_data(seed=1), batch_size=self.batch_size)

    def test_dataloader(self) -> DataLoader:
        return self.val_dataloader()

    def predict_dataloader(self) -> DataLoader:
        return self.val_dataloader()


class TinyRegressor(LightningModule):
    """An 8-16-1 MLP regressor that records the dtype its forward ran in, its parameters' dtypes and its losses
    (precision tests read them)."""

    def __init__(self, lr: float = 0.05, seed: int = 0) -> None:
        super().__init__()
        torch.manual_seed(seed)
        self.net = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
        self.lr = lr
        self.forward_dtypes: set[torch.dtype] = set()
        self.param_dtypes: set[torch.dtype] = set()
        self.losses: list[float] = []

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        out = self.net(x)
        self.forward_dtypes.add(out.dtype)
        self.param_dtypes.update(p.dtype for p in self.parameters())
        loss = nn.functional.mse_loss(out.float(), y.float())
        self.losses.append(loss.item())
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=self.lr)


class TinyClassifier(LightningModule):
    """An 8-16-``classes`` MLP classifier: records its outputs' dtypes in training and its logits in validation, where
    it logs ``val_loss`` and ``val_acc``."""

    def __init__(self, classes: int = 3, lr: float = 0.2, activation: type[nn.Module] = nn.Tanh) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(8, 16), activation(), nn.Linear(16, classes))
        self.lr = lr
        self.dtypes: list[torch.dtype] = []
        self.predictions: list[torch.Tensor] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        out = self(x)
        self.dtypes.append(out.dtype)
        return nn.functional.cross_entropy(out.float(), y)

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        x, y = batch
        logits = self(x)
        self.predictions.append(logits)
        self.log("val_loss", nn.functional.cross_entropy(logits, y))
        self.log("val_acc", (logits.argmax(-1) == y).float().mean())

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=self.lr)


class Block(nn.Module):
    """A residual block (norm, linear, ReLU): what HPUCompile(modules=[Block]) compiles region by region."""

    def __init__(self, width: int = 16) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.linear = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.relu(self.linear(self.norm(x)))


class BlockModel(LightningModule):
    """Repeated blocks; ``vary`` cuts every batch to a new size; ``log`` logs the loss in the step."""

    def __init__(self, depth: int = 2, samples: int = 64, vary: bool = False, log: bool = True) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.blocks = nn.Sequential(*[Block() for _ in range(depth)])
        self.head = nn.Linear(16, 1)
        self.samples = samples
        self.vary = vary
        self.do_log = log
        self.batch_sizes: list[int] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(x))

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        if self.vary:
            x, y = x[: 1 + batch_idx % 7], y[: 1 + batch_idx % 7]
        self.batch_sizes.append(x.shape[0])
        loss = nn.functional.mse_loss(self(x), y)
        if self.do_log:
            self.log("train_loss", loss)
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.01)

    def train_dataloader(self) -> DataLoader:
        x = torch.randn(self.samples, 16, generator=torch.Generator().manual_seed(0))
        return DataLoader(TensorDataset(x, x[:, :1]), batch_size=8)
