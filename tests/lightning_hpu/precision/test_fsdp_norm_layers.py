"""Norm layers under bf16 autocast run as on a Gaudi: HPU autocast lowers their input, not their weights.

The case that failed: FSDP's bf16 mixed precision casts a norm layer's weights to bf16, and the layer's input
arrives in fp32 (here, after adding an fp32 tensor, as a positional encoding does).
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn.functional as F
from lightning.pytorch import LightningModule
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from tests.helpers.trainer import quiet_trainer

#: The bridge's "lower first arg" autocast ops: their input is lowered, their weights are not.
LOWER_FIRST_OPS = ("batch_norm", "group_norm", "instance_norm", "layer_norm")

NORMS = {
    "layer_norm": lambda: nn.LayerNorm(16),
    "group_norm": lambda: nn.GroupNorm(4, 16),
    "batch_norm": lambda: nn.BatchNorm1d(16),
    "instance_norm": lambda: nn.InstanceNorm1d(16, affine=True),
}


@pytest.mark.parametrize("name", LOWER_FIRST_OPS)
def test_autocast_lowers_a_norms_fp32_input_and_keeps_its_weights(standin: Any, name: str) -> None:
    device = standin.torch_device()
    norm = NORMS[name]().to(device, torch.bfloat16)
    x = torch.randn(4, 16, 3 if name == "instance_norm" else 1, device=device).squeeze(-1).requires_grad_()
    with torch.autocast(standin.autocast_device_type, dtype=torch.bfloat16):
        out = norm(x)
    assert out.dtype == torch.bfloat16
    out.float().sum().backward()
    assert x.grad is not None and x.grad.dtype == torch.float32  # the cast is differentiable
    assert norm.weight.dtype == torch.bfloat16 and norm.weight.grad is not None
    # Outside autocast nothing is lowered.
    assert NORMS[name]().to(device)(x.detach()).dtype == torch.float32


class _Encoder(LightningModule):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.embed = nn.Linear(8, 16)
        self.norms = nn.ModuleList([nn.LayerNorm(16), nn.GroupNorm(4, 16), nn.BatchNorm1d(16)])
        self.head = nn.Linear(16, 2)
        self.losses: list[float] = []

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        hidden = self.embed(x) + torch.ones(16, device=self.device)  # bf16 + fp32 (a positional encoding): fp32
        for norm in self.norms:
            hidden = norm(hidden)
        loss = F.cross_entropy(self.head(hidden).float(), y)
        self.losses.append(loss.item())
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.1)


def test_fsdp_bf16_mixed_trains_a_model_with_norm_layers(standin: Any) -> None:
    x = torch.randn(64, 8, generator=torch.Generator().manual_seed(2))
    model = _Encoder()
    quiet_trainer(
        accelerator="hpu", devices=1, strategy="fsdp", precision="bf16-mixed", max_epochs=3, enable_checkpointing=False
    ).fit(model, DataLoader(TensorDataset(x, (x[:, 0] > 0).long()), batch_size=16))
    assert sum(model.losses[-4:]) < sum(model.losses[:4])
