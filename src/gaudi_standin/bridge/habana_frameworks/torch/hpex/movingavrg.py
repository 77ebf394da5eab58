"""``habana_frameworks.torch.hpex.movingavrg`` on the stand-in: ``FusedEMA``, the bridge's moving average of a model."""

from __future__ import annotations

from gaudi_standin.optimizers import FusedEMA

__all__ = ["FusedEMA"]
