"""The bridge's ``FusedSGD`` on the stand-in (see the package docstring for its formula and state)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch.optim import Optimizer

from gaudi_standin.optimizers.common import (
    _REQUIRED,
    _grads_of,
    _mark_step,
)


class FusedSGD(Optimizer):
    """The bridge's ``FusedSGD`` on the stand-in (see the module docstring for its momentum buffer)."""

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = _REQUIRED,
        momentum: float = 0.0,
        weight_decay: float = 0.0,
        dampening: float = 0.0,
        nesterov: bool = False,
    ) -> None:
        if lr is _REQUIRED:
            raise TypeError("FusedSGD needs `lr`, e.g. FusedSGD(params, lr=0.1).")
        for name, value in (("lr", lr), ("momentum", momentum), ("weight_decay", weight_decay)):
            if not value >= 0.0:
                raise ValueError(f"`{name}={value!r}` must be >= 0.")
        if not dampening >= 0.0:
            raise ValueError(f"`dampening={dampening!r}` must be >= 0.")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("`nesterov=True` needs `momentum` > 0 and `dampening=0`.")
        defaults = dict(lr=lr, momentum=momentum, weight_decay=weight_decay, dampening=dampening, nesterov=nesterov)
        super().__init__(params, defaults)
        for group in self.param_groups:
            if group["momentum"] != 0:
                for param, _ in _grads_of(group["params"], "FusedSGD"):
                    self.state[param]["momentum_buffer"] = torch.zeros_like(param)
        _mark_step()

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            pairs = _grads_of(group["params"], "FusedSGD")
            momentum, dampening = group["momentum"], group["dampening"]
            _mark_step()
            for param, grad in pairs:
                d_p = grad if group["weight_decay"] == 0 else grad.add(param, alpha=group["weight_decay"])
                if momentum != 0:
                    state = self.state[param]
                    if "momentum_buffer" not in state:
                        state["momentum_buffer"] = torch.zeros_like(grad)
                    buffer = state["momentum_buffer"]
                    buffer.mul_(momentum).add_(d_p, alpha=1.0 - dampening)
                    d_p = d_p.add(buffer, alpha=momentum) if group["nesterov"] else buffer
                param.add_(d_p, alpha=-group["lr"])
            _mark_step()
        return loss
