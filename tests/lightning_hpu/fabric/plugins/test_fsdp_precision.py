"""Fabric's FSDP precision on HPU keeps the gradient scaler it is given (Lightning's keeps only the one it makes)."""

from __future__ import annotations

from typing import Any

from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler

from lightning_hpu.fabric.plugins import HPUFSDPPrecision
from lightning_hpu.runtime import require_backend


def test_the_scaler_given_is_the_scaler_used(standin: Any) -> None:
    mine = ShardedGradScaler(device=require_backend().torch_device().type)
    assert HPUFSDPPrecision("16-mixed", scaler=mine).scaler is mine
    assert isinstance(HPUFSDPPrecision("16-mixed").scaler, ShardedGradScaler)  # made when none is given
    assert HPUFSDPPrecision("bf16-mixed").scaler is None
