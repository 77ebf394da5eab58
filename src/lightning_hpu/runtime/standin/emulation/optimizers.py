"""``habana_frameworks.torch.hpex.optimizers`` on the stand-in: the stand-in's own fused optimizers."""

from __future__ import annotations

from lightning_hpu.runtime.standin.optimizers import FusedAdamW, FusedSGD

__all__ = ["FusedAdamW", "FusedSGD"]
