"""The bridge's ``FusedLars`` on the stand-in: layer-wise gradient scaling around another optimizer."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor
from torch.optim import Optimizer

from gaudi_standin.optimizers.common import (
    _mark_step,
    _run_closure,
    _wide,
)


class FusedLars(Optimizer):
    """The bridge's ``FusedLars(optimizer, skip_mask, eeta=0.001, eps=1e-8)``: LARS scaling around another optimizer.

    The bridge's kernel is closed; the stand-in computes what the bridge's non-fused ``Lars`` reference does. Per
    group of the wrapped optimizer (``group["weight_decay"]`` is taken out of it for the step and put back after),
    for the ``idx``-th parameter of the group with a gradient: if ``skip_mask[idx] == 1`` (the parameter takes part
    in LARS; ``0`` skips it), ``g = (g + weight_decay * w) * lr * r`` with the trust ratio
    ``r = eeta * ||w|| / (||g|| + weight_decay * ||w|| + eps)`` when both norms are positive, else ``r = 1``;
    otherwise ``g = g * lr``. The scaled gradient is written into ``.grad``, then the wrapped optimizer steps (with
    its own ``lr``, as on the bridge).

    It shares the wrapped optimizer's parameter groups and state, as the bridge's does.
    """

    def __init__(self, optimizer: Optimizer, skip_mask: Sequence[int], eeta: float = 0.001, eps: float = 1e-8) -> None:
        self.optim = optimizer
        self.eeta = eeta
        self.eps = eps
        self.skip_mask = skip_mask
        defaults = optimizer.defaults
        defaults.update(dict(skip_mask=skip_mask, eeta=eeta, eps=eps))
        super().__init__(optimizer.param_groups, defaults)
        self.state = self.optim.state

    def zero_grad(self, set_to_none: bool = False) -> None:
        self.optim.zero_grad(set_to_none)

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = _run_closure(closure)
        weight_decays = []
        for group in self.optim.param_groups:
            weight_decay = group.get("weight_decay", 0)
            weight_decays.append(weight_decay)
            group["weight_decay"] = 0
            scaled = [
                (param, grad, self.skip_mask[idx])
                for idx, param in enumerate(group["params"])
                if (grad := param.grad) is not None
            ]
            if not scaled:
                continue
            _mark_step()
            for param, grad, mask in scaled:
                wide = _wide(param.dtype)
                g = grad.to(wide)
                scale: Tensor | float = group["lr"]
                if mask == 1:
                    w = param.to(wide)
                    weight_norm, grad_norm = torch.linalg.vector_norm(w), torch.linalg.vector_norm(g)
                    ratio = torch.where(
                        (weight_norm > 0) & (grad_norm > 0),
                        self.eeta * weight_norm / (grad_norm + weight_decay * weight_norm + self.eps),
                        torch.ones_like(weight_norm),
                    )
                    scale = ratio * group["lr"]
                    g = g + weight_decay * w
                grad.copy_((g * scale).to(grad.dtype))
            _mark_step()
        self.optim.step()
        for group, weight_decay in zip(self.optim.param_groups, weight_decays, strict=True):
            group["weight_decay"] = weight_decay
        return loss
