"""The mean of the losses of a logging interval, with non-finite ones left out (optimum-habana's
``logging_nan_inf_filter``), kept on the device so that no step waits for the host."""

from __future__ import annotations

import torch
from torch import Tensor


class FiniteMean:
    """Running mean of scalar losses; with ``nan_inf_filter``, NaN and infinite losses are not counted.

    Use it with Fabric as ``mean.update(loss)`` each step and ``mean.compute()`` (then ``mean.reset()``) when logging;
    the Trainer's :class:`~lightning_hpu.HPULossLogger` does that itself.
    """

    def __init__(self, nan_inf_filter: bool = True) -> None:
        self.nan_inf_filter = nan_inf_filter
        self._sum: Tensor | None = None
        self._count: Tensor | None = None

    def update(self, loss: Tensor) -> None:
        """Add one step's loss (a scalar tensor, detached here)."""
        value = loss.detach().float().reshape(())
        kept = torch.isfinite(value) if self.nan_inf_filter else torch.ones((), dtype=torch.bool, device=value.device)
        value = torch.where(kept, value, torch.zeros_like(value))
        self._sum = value if self._sum is None else self._sum + value
        count = kept.float()
        self._count = count if self._count is None else self._count + count

    @property
    def empty(self) -> bool:
        """Whether nothing was added since the last reset."""
        return self._sum is None

    def compute(self) -> Tensor:
        """The mean of the counted losses (NaN when every loss of the interval was filtered out)."""
        if self._sum is None or self._count is None:
            raise RuntimeError("FiniteMean.compute() needs at least one update() since the last reset().")
        return self._sum / self._count

    def reset(self) -> None:
        self._sum = self._count = None
