"""``habana_frameworks.torch.hpex.optimizers`` on the stand-in: the stand-in's own fused optimizers."""

from __future__ import annotations

from gaudi_standin.optimizers import FusedAdagrad, FusedAdamW, FusedLamb, FusedLars, FusedSGD

__all__ = ["FusedAdagrad", "FusedAdamW", "FusedLamb", "FusedLars", "FusedSGD"]
