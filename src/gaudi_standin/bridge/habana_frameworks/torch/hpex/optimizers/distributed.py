"""``habana_frameworks.torch.hpex.optimizers.distributed`` on the stand-in: the functional ``FusedAdamW``.

Torch's distributed optimizers (``DistributedDataParallel._register_fused_optim``, ``DistributedOptimizer``) drive a
functional optimizer: gradients are handed to ``step(gradients)`` or ``step_param(param, grad)`` instead of being
read from ``.grad``. The formulas are :class:`gaudi_standin.optimizers.FusedAdamW`'s, with the step counted per
parameter as the bridge's functional version does: ``w *= 1 - lr * weight_decay``, then
``w -= lr * sqrt(bc2) / bc1 * m / (sqrt(v) + eps)``.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from gaudi_standin.optimizers import fp8_moments
from gaudi_standin.optimizers.adamw import _fp8_moments_update
from gaudi_standin.optimizers.common import _moment_dtypes

__all__ = ["FusedAdamW"]


class FusedAdamW:
    """The bridge's functional AdamW for distributed optimizers (one parameter group, no ``amsgrad``/``maximize``)."""

    def __init__(
        self,
        params: list[Tensor],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-6,
        weight_decay: float = 0.0,
        _allow_empty_param_list: bool = False,
        moments_dtype: torch.dtype | tuple[torch.dtype, torch.dtype] | None = None,
    ) -> None:
        for name, value, ok in (
            ("lr", lr, lr >= 0.0),
            ("eps", eps, eps >= 0.0),
            ("betas", betas, all(0.0 <= beta < 1.0 for beta in betas)),
            ("weight_decay", weight_decay, weight_decay >= 0.0),
        ):
            if not ok:
                raise ValueError(f"Invalid {name} value: {value}")
        if len(params) == 0 and not _allow_empty_param_list:
            raise ValueError("optimizer got an empty parameter list")
        self.defaults = {"lr": lr, "eps": eps, "beta1": betas[0], "beta2": betas[1], "weight_decay": weight_decay}
        self.amsgrad = self.maximize = False
        self.state: dict[Tensor, dict[str, Tensor]] = {}
        self.param_group = {"params": params}
        self.moments_dtype = moments_dtype
        self._moment_dtypes = _moment_dtypes(moments_dtype)

    @torch.no_grad()
    def step_param(self, param: Tensor, grad: Tensor | None) -> None:
        """One AdamW step of ``param`` with ``grad`` (nothing without a gradient)."""
        if param not in self.state:
            exp_avg_dtype, exp_avg_sq_dtype = self._moment_dtypes
            self.state[param] = {
                "step": torch.tensor(0.0),
                "exp_avg": torch.zeros_like(param, dtype=exp_avg_dtype or param.dtype),
                "exp_avg_sq": torch.zeros_like(param, dtype=exp_avg_sq_dtype or param.dtype),
            }
            if fp8_moments.is_fp8(exp_avg_dtype) or fp8_moments.is_fp8(exp_avg_sq_dtype):
                self.state[param]["exp_avg_scale"] = fp8_moments.new_scale(param)
                self.state[param]["exp_avg_sq_scale"] = fp8_moments.new_scale(param)
        if grad is None:
            return
        state = self.state[param]
        state["step"] += 1
        step = float(state["step"])
        beta1, beta2, lr = self.defaults["beta1"], self.defaults["beta2"], self.defaults["lr"]
        step_size = lr * math.sqrt(1.0 - beta2**step) / (1.0 - beta1**step)
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        decay = 1.0 - self.defaults["weight_decay"] * lr
        if "exp_avg_scale" in state:  # fp8 moments, computed in the parameter's dtype as the bridge's kernel
            update = _fp8_moments_update(state, grad.to(param.dtype), beta1, beta2, self.defaults["eps"], step_size)
            param.copy_(param * decay + update)
            return
        g = grad.float()
        exp_avg.copy_(exp_avg.float() * beta1 + g * (1.0 - beta1))
        exp_avg_sq.copy_(exp_avg_sq.float() * beta2 + g * g * (1.0 - beta2))
        update = exp_avg.float() / (exp_avg_sq.float().sqrt() + self.defaults["eps"]) * -step_size
        param.copy_(param.float() * decay + update)

    def step(self, gradients: list[Tensor | None]) -> None:
        """One step of every parameter, ``gradients`` in the order of ``params``."""
        params = self.param_group["params"]
        if len(params) != len(gradients):
            raise ValueError(
                "the gradients passed in does not equal to the size of the parameters!"
                f" Params length: {len(params)}. Gradients length: {len(gradients)}"
            )
        for param, grad in zip(params, gradients, strict=True):
            self.step_param(param, grad)
