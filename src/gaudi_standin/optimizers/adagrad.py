"""The bridge's ``FusedAdagrad`` on the stand-in, with the bridge's state."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch.optim import Optimizer

from gaudi_standin.optimizers.common import (
    _grads_of,
    _mark_step,
    _run_closure,
    _wide,
)


class FusedAdagrad(Optimizer):
    """The bridge's ``FusedAdagrad`` on the stand-in: ``torch.optim.Adagrad``'s update, the bridge's state.

    Per parameter with a gradient: ``g += weight_decay * w``; ``sum += g**2``;
    ``w -= clr * g / (sqrt(sum) + eps)`` with ``clr = lr_t / (1 + (step_t - 1) * lr_decay)``. The bridge's kernel
    is closed; its test compares it to ``torch.optim.Adagrad``, whose formula this is.

    As on the bridge, ``state["sum"]`` is created at construction (``initial_accumulator_value``) for every
    parameter, and each group carries ``lr_t`` (a device tensor made from the constructor's ``lr``, not the group's:
    changing ``group["lr"]`` changes nothing, as on a Gaudi) and ``step_t`` (an int32 device tensor, counted on the
    device, every step).
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-2,
        lr_decay: float = 0,
        weight_decay: float = 0,
        initial_accumulator_value: float = 0,
        eps: float = 1e-10,
    ) -> None:
        for name, value in (
            ("lr", lr),
            ("lr_decay", lr_decay),
            ("weight_decay", weight_decay),
            ("initial_accumulator_value", initial_accumulator_value),
            ("eps", eps),
        ):
            if not value >= 0.0:
                raise ValueError(f"`{name}={value!r}` must be >= 0.")
        defaults = dict(
            lr=lr,
            lr_decay=lr_decay,
            eps=eps,
            weight_decay=weight_decay,
            initial_accumulator_value=initial_accumulator_value,
        )
        super().__init__(params, defaults)
        hpu = torch.device("hpu")
        for group in self.param_groups:
            for param in group["params"]:
                self.state[param]["sum"] = torch.full_like(param, fill_value=initial_accumulator_value)
            group["lr_t"] = torch.tensor([lr]).to(hpu)
            group["step_t"] = torch.tensor([0], dtype=torch.int32).to(hpu)
        _mark_step()

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = _run_closure(closure)
        for group in self.param_groups:
            _mark_step()
            pairs = _grads_of(group["params"], "Adagrad")
            group["step_t"].add_(1)
            clr = group["lr_t"] / (1 + (group["step_t"] - 1) * group["lr_decay"])
            for param, grad in pairs:
                state_sum = self.state[param]["sum"]
                wide = _wide(param.dtype)
                g = grad.to(wide)
                if group["weight_decay"] != 0:
                    g = g + group["weight_decay"] * param.to(wide)
                state_sum.addcmul_(g.to(state_sum.dtype), g.to(state_sum.dtype))
                update = clr.to(wide) * g / (state_sum.to(wide).sqrt() + group["eps"])
                param.sub_(update.to(param.dtype))
        return loss
