"""The bridge's ``FusedEMA`` on the stand-in: an exponential moving average of a model's floating state."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from typing import cast

import torch
from torch import nn

from gaudi_standin.optimizers.common import (
    _mark_step,
    _wide,
)


def _is_parallel(model: nn.Module) -> bool:
    return type(model) in (nn.parallel.DataParallel, nn.parallel.DistributedDataParallel)


class FusedEMA:
    """The bridge's ``hpex.movingavrg.FusedEMA(model, decay=0.9999, updates=0)`` on the stand-in.

    ``ema`` is a copy of the model (unwrapped from ``DataParallel``/``DistributedDataParallel``) in eval mode, and
    ``updated_ema`` the values of its ``state_dict()``. ``update(model)`` counts ``updates`` and, with
    ``d = decay * (1 - exp(-updates / 2000))`` (the bridge's ramp), sets each floating entry to
    ``d * ema + (1 - d) * model`` in place, pairing ``model.state_dict()``'s values with the copy's in order; integer
    buffers (``num_batches_tracked``) are left alone, as in the reference the bridge's test compares to.
    """

    def __init__(self, model: nn.Module, decay: float = 0.9999, updates: float = 0) -> None:
        if not decay >= 0.0:
            raise ValueError(f"Invalid decay value: {decay}")
        source = cast(nn.Module, model.module) if _is_parallel(model) else model
        self.ema = copy.deepcopy(source).eval()
        self.decay: Callable[[float], float] = lambda x: decay * (1 - math.exp(-x / 2000))
        self.updates = updates
        self.updated_ema = list(self.ema.state_dict().values())

    def update(self, model: nn.Module) -> None:
        _mark_step()
        model_inputs = list(model.state_dict().values())
        with torch.no_grad():
            self.updates += 1
            d = torch.tensor([self.decay(self.updates)]).to(torch.device("hpu"))
            for source, average in zip(model_inputs, self.updated_ema, strict=True):
                if not average.dtype.is_floating_point:
                    continue
                wide = _wide(average.dtype)
                blended = d.to(wide) * average.to(wide) + (1 - d.to(wide)) * source.to(wide)
                average.copy_(blended.to(average.dtype))
        _mark_step()

    def update_attr(
        self, model: nn.Module, include: Sequence[str] = (), exclude: Sequence[str] = ("process_group", "reducer")
    ) -> None:
        """Copy ``model``'s public attributes onto ``ema`` (only ``include``, if given; never ``exclude``)."""
        for key, value in model.__dict__.items():
            if (include and key not in include) or key.startswith("_") or key in exclude:
                continue
            setattr(self.ema, key, value)
