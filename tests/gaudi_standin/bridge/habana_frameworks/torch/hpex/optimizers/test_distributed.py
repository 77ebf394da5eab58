"""``hpex.optimizers.distributed.FusedAdamW``: steps with the gradients it is handed, as AdamW written out here."""

from __future__ import annotations

import math

import pytest
import torch
from torch import Tensor

import gaudi_standin.bridge.habana_frameworks.torch  # noqa: F401 (the device and torch.ops.hpu)
from gaudi_standin.bridge.habana_frameworks.torch.hpex.optimizers.distributed import FusedAdamW

HPU = torch.device("hpu")


def _adamw_reference(
    w: Tensor, grads: list[Tensor], lr: float, betas: tuple[float, float], eps: float, wd: float
) -> Tensor:
    m, v = torch.zeros_like(w), torch.zeros_like(w)
    for t, g in enumerate(grads, start=1):
        m = betas[0] * m + (1 - betas[0]) * g
        v = betas[1] * v + (1 - betas[1]) * g * g
        step = lr * math.sqrt(1 - betas[1] ** t) / (1 - betas[0] ** t)
        w = w * (1 - lr * wd) - step * m / (v.sqrt() + eps)
    return w


def test_distributed_fused_adamw_steps_with_handed_gradients() -> None:
    torch.manual_seed(1)
    start = [torch.randn(4), torch.randn(3)]
    grads = [[torch.randn(4), torch.randn(3)] for _ in range(3)]
    params = [p.to(HPU) for p in start]
    optimizer = FusedAdamW(params, lr=0.1, betas=(0.8, 0.9), eps=1e-6, weight_decay=0.05)
    for step_grads in grads:
        optimizer.step([g.to(HPU) for g in step_grads])
    for i, param in enumerate(params):
        expected = _adamw_reference(start[i], [g[i] for g in grads], 0.1, (0.8, 0.9), 1e-6, 0.05)
        torch.testing.assert_close(param.cpu(), expected)
    with pytest.raises(ValueError, match="Gradients length: 1"):
        optimizer.step([None])
    with pytest.raises(ValueError, match="empty parameter list"):
        FusedAdamW([])
