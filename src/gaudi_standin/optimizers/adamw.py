"""The bridge's ``FusedAdamW`` on the stand-in (see the package docstring for its formula and state)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import Tensor
from torch.optim import Optimizer

from gaudi_standin.optimizers import fp8_moments
from gaudi_standin.optimizers.common import (
    _compute_dtype,
    _grads_of,
    _mark_step,
    _moment_dtypes,
)


class FusedAdamW(Optimizer):
    """The bridge's ``FusedAdamW`` on the stand-in (see the module docstring for its formulas and state)."""

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-6,
        weight_decay: float = 0.0,
        bias_correction: bool = True,
        moments_dtype: torch.dtype | tuple[torch.dtype, torch.dtype] | None = None,
    ) -> None:
        if not lr >= 0.0:
            raise ValueError(f"`lr={lr!r}` must be >= 0.")
        if not all(0.0 <= beta < 1.0 for beta in betas):
            raise ValueError(f"`betas={betas!r}` must be two numbers in [0, 1).")
        if not eps >= 0.0:
            raise ValueError(f"`eps={eps!r}` must be >= 0.")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, bias_correction=bias_correction)
        super().__init__(params, defaults)
        self.moments_dtype = moments_dtype
        self._exp_avg_dtype, self._exp_avg_sq_dtype = _moment_dtypes(moments_dtype)
        self._moments_in_fp8 = fp8_moments.is_fp8(self._exp_avg_dtype) or fp8_moments.is_fp8(self._exp_avg_sq_dtype)

    @staticmethod
    def _bias_correction(group: dict[str, Any]) -> bool:
        # Old checkpoints say ``correct_bias``; a torch AdamW's groups say neither (it corrects).
        return bool(group.get("bias_correction", group.get("correct_bias", True)))

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            _mark_step()
            pairs = _grads_of(group["params"], "FusedAdamW")
            for param, _ in pairs:
                state = self.state[param]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(param, dtype=self._exp_avg_dtype or param.dtype)
                    state["exp_avg_sq"] = torch.zeros_like(param, dtype=self._exp_avg_sq_dtype or param.dtype)
                    if self._moments_in_fp8:  # the kernel's per-tensor scales (see fp8_moments)
                        state["exp_avg_scale"] = fp8_moments.new_scale(param)
                        state["exp_avg_sq_scale"] = fp8_moments.new_scale(param)
            if not pairs:
                continue
            group["step"] = group.get("step", 0) + 1
            beta1, beta2 = group["betas"]
            step_size = group["lr"]
            if self._bias_correction(group):
                step_size *= math.sqrt(1.0 - beta2 ** group["step"]) / (1.0 - beta1 ** group["step"])
            decay = 1.0 - group["weight_decay"] * group["lr"]
            for param, grad in pairs:
                state = self.state[param]
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                if self._moments_in_fp8:
                    update = _fp8_moments_update(state, grad.to(param.dtype), beta1, beta2, group["eps"], step_size)
                else:
                    compute = _compute_dtype(param.dtype, exp_avg.dtype)
                    g = grad.to(compute)
                    exp_avg.mul_(beta1).add_(g, alpha=1.0 - beta1)
                    exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1.0 - beta2)
                    update = exp_avg.to(compute) / (exp_avg_sq.to(compute).sqrt() + group["eps"]) * -step_size
                if decay != 1.0:
                    param.mul_(decay)
                param.add_(update.to(param.dtype))
        _mark_step()
        return loss


def _fp8_moments_update(
    state: dict[str, Any], grad: Tensor, beta1: float, beta2: float, eps: float, step_size: float
) -> Tensor:
    """The update of one parameter whose moments are kept in fp8 (or one of them), computed in the gradient's dtype.

    As the bridge's kernel: the moments are dequantized, updated, used unrounded for the update, then stored again
    with fresh scales (:mod:`gaudi_standin.optimizers.fp8_moments`); a moment not in fp8 is kept as it is.
    """
    moments = []
    for name, beta, new in (("exp_avg", beta1, grad), ("exp_avg_sq", beta2, grad * grad)):
        stored, scale = state[name], state[f"{name}_scale"]
        if fp8_moments.is_fp8(stored.dtype):
            value = fp8_moments.load(stored, scale, grad.dtype) * beta + new * (1.0 - beta)
            fp8_moments.store(value, stored, scale)
        else:
            value = stored.to(grad.dtype) * beta + new * (1.0 - beta)
            stored.copy_(value)
        moments.append(value)
    return moments[0] / (moments[1].sqrt() + eps) * -step_size
