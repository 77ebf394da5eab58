"""``habana_frameworks.torch.hpex.normalization`` on the stand-in: the stand-in's ``FusedClipNorm``."""

from __future__ import annotations

from lightning_hpu.runtime.standin.optimizers import FusedClipNorm

__all__ = ["FusedClipNorm"]
