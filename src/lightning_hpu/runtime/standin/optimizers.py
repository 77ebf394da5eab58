"""The stand-in's fused optimizers and clipping: the bridge's ``FusedAdamW``, ``FusedSGD`` and ``FusedClipNorm``.

Same constructor arguments, the same update formulas and the same optimizer state as the bridge's
``hpex.optimizers``/``hpex.normalization`` classes, computed with plain torch ops on the CPU, so an optimizer state
saved on one means the same on the other:

* ``FusedAdamW`` counts steps per parameter group (``group["step"]``; each parameter's ``state["step"]`` is created
  as 0 and stays 0, as on the bridge), folds the bias corrections into the step size
  (``lr * sqrt(1 - beta2**t) / (1 - beta1**t)``), adds ``eps`` to the uncorrected ``sqrt(exp_avg_sq)``, and decays
  the weights by ``1 - lr * weight_decay`` before adding the update. With ``eps`` this differs from
  ``torch.optim.AdamW``, which adds ``eps`` after the bias correction.
* ``FusedSGD`` keeps a ``momentum_buffer`` per parameter, created as zeros: the first step's buffer is
  ``(1 - dampening) * grad`` (torch's SGD starts from ``grad``; they agree for ``dampening=0``).
* ``FusedClipNorm`` scales the gradients in place to a total 2-norm of at most ``max_norm`` and returns the norm.

In lazy mode each marks steps where the bridge's does (``FusedAdamW``: before each group and after the step;
``FusedSGD``: at construction and around each group; ``FusedClipNorm``: before and after), through the active
backend, so the stand-in counts them.

All three run inside an HPU graph capture, as the bridge's device kernels do: the step computes with tensor ops
only (no host reads). As on the bridge, the hyperparameters and ``FusedAdamW``'s bias-corrected step size are host
values handed to the kernel, so a replay reuses the ones of the captured step.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import Tensor
from torch.optim import Optimizer
from torch.optim.optimizer import required

__all__ = ["FusedAdamW", "FusedClipNorm", "FusedSGD"]

#: torch's marker for a required optimizer argument (``FusedSGD``'s ``lr``, as on the bridge).
_REQUIRED: Any = required


def _mark_step() -> None:
    """Mark a step on the active backend (counted by the stand-in in lazy mode, a no-op in eager mode)."""
    from lightning_hpu.runtime import get_backend

    backend = get_backend()
    if backend is not None:
        backend.mark_step()


def _grads_of(params: Iterable[Tensor], optimizer: str) -> list[tuple[Tensor, Tensor]]:
    pairs = []
    for param in params:
        grad = param.grad
        if grad is None:
            continue
        if grad.is_sparse:
            raise RuntimeError(f"{optimizer} does not support sparse gradients; use torch.optim.SparseAdam instead.")
        pairs.append((param, grad))
    return pairs


#: Floating dtype promotion, worked out once at import: ``torch.promote_types`` dispatches as an aten op that
#: returns a Python value, which an HPU graph capture refuses as a host sync. The bridge's fused kernels pick their
#: compute dtype on the device side; this table lets the stand-in's step run inside a capture the same way.
_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_PROMOTED: dict[tuple[torch.dtype, torch.dtype], torch.dtype] = {
    (a, b): torch.promote_types(a, b) for a in _FLOATS for b in _FLOATS
}


def _compute_dtype(param: torch.dtype, moment: torch.dtype) -> torch.dtype:
    """The dtype an update of a ``param`` parameter with ``moment`` moments is computed in (their promotion)."""
    promoted = _PROMOTED.get((param, moment))
    return promoted if promoted is not None else torch.promote_types(param, moment)


def _moment_dtypes(moments_dtype: Any) -> tuple[torch.dtype | None, torch.dtype | None]:
    if moments_dtype is None or isinstance(moments_dtype, torch.dtype):
        dtypes: tuple[Any, Any] = (moments_dtype, moments_dtype)
    else:
        dtypes = tuple(moments_dtype)
    if len(dtypes) != 2 or not all(d is None or (isinstance(d, torch.dtype) and d.is_floating_point) for d in dtypes):
        raise ValueError(
            f"`moments_dtype={moments_dtype!r}` must be a floating dtype or a pair of them (first and second moment)."
        )
    if any(d is not None and d.itemsize == 1 for d in dtypes):
        raise ValueError(
            f"`moments_dtype={moments_dtype!r}`: fp8 moments need a Gaudi's fp8 kernels, which the CPU stand-in"
            " does not have; use torch.bfloat16 or torch.float32."
        )
    return dtypes[0], dtypes[1]


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


class FusedClipNorm:
    """The bridge's ``FusedClipNorm``: ``FusedClipNorm(parameters, max_norm).clip_norm(parameters)`` (2-norm)."""

    def __init__(self, parameters: Iterable[Tensor], max_norm: float) -> None:
        params = list(parameters)
        # The bridge keeps the bound in the dtype of the first parameter.
        self.dtype = params[0].dtype if params else torch.float32
        # ... on the HPU (the bridge's ``torch.device("hpu")``: the current one), whatever device the parameters are on
        # when the clipper is made (a script may make it before moving the model).
        self.device = torch.device("hpu")
        bound = max_norm if isinstance(max_norm, Tensor) else torch.tensor(float(max_norm))
        self.max_norm_t = bound.to(self.dtype).to(self.device)
        self.norm_type = 2.0

    @torch.no_grad()
    def clip_norm(self, parameters: Iterable[Tensor] | Tensor) -> Tensor:
        """Scale the gradients in place to a total 2-norm of at most ``max_norm``; return the norm before."""
        _mark_step()
        params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
        grads = [param.grad for param in params if param.grad is not None]
        if not grads:
            return torch.zeros((), device=self.device)
        total = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g.float()) for g in grads]))
        scale = torch.clamp(self.max_norm_t.float() / (total + 1e-6), max=1.0)
        for grad in grads:
            grad.mul_(scale.to(grad.dtype))
        _mark_step()
        return total.to(self.dtype)
