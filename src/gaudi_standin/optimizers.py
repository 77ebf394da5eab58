"""The stand-in's fused optimizers, clipping and EMA: the bridge's ``FusedAdamW``, ``FusedSGD``, ``FusedLamb``,
``FusedAdagrad``, ``FusedLars``, ``FusedClipNorm`` and ``FusedEMA``.

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
* ``FusedLamb`` (BERT pre-training's optimizer) runs its math in closed device kernels on the bridge
  (``optimizer_lamb_fused_norm``, ``optimizer_lamb_phase1``/``phase2``); the stand-in computes what the reference
  functions of the bridge's own kernel tests compute: see :class:`FusedLamb`.
* ``FusedAdagrad``'s kernel is closed too; the bridge's test holds it to ``torch.optim.Adagrad``, whose formula the
  stand-in computes, with the bridge's state (``sum`` per parameter, the ``lr_t``/``step_t`` tensors per group).
* ``FusedLars`` wraps another optimizer: it scales the gradients layer-wise (the bridge's non-fused ``Lars``
  reference), then calls the wrapped optimizer's ``step`` with its weight decay switched off.
* ``FusedClipNorm`` scales the gradients in place to a total 2-norm of at most ``max_norm`` and returns the norm.
* ``FusedEMA`` keeps an exponential moving average of a model's floating state (a copy of the model).

In lazy mode each marks steps where the bridge's does (``FusedAdamW``: before each group and after the step;
``FusedSGD``: at construction and around each group; ``FusedLamb``: before each group's two phases and after each;
``FusedAdagrad``: at construction and before each group; ``FusedLars``: around each group's scaling;
``FusedClipNorm`` and ``FusedEMA``: before and after), through the active backend, so the stand-in counts them.

All of them run inside an HPU graph capture, as the bridge's device kernels do: a step computes with tensor ops
only (no host reads; clipping and trust ratios choose with ``torch.where``). As on the bridge, the hyperparameters
and the values the bridge computes on the host (``FusedAdamW``'s bias-corrected step size, ``FusedLamb``'s bias
corrections, ``FusedEMA``'s decay) are handed to the kernel as they were at the step, so a replay reuses the ones
of the captured step; ``FusedAdagrad`` counts its steps in a device tensor, so its learning-rate decay advances at
each replay, as on a Gaudi.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any, cast

import torch
from torch import Tensor, nn
from torch.optim import Optimizer
from torch.optim.optimizer import required

__all__ = ["FusedAdagrad", "FusedAdamW", "FusedClipNorm", "FusedEMA", "FusedLamb", "FusedLars", "FusedSGD"]

#: torch's marker for a required optimizer argument (``FusedSGD``'s ``lr``, as on the bridge).
_REQUIRED: Any = required


def _mark_step() -> None:
    """Mark a step, as the bridge's optimizers do (counted in lazy mode, a no-op in eager mode)."""
    from gaudi_standin import runtime

    runtime.current().mark_step()


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


def _wide(dtype: torch.dtype) -> torch.dtype:
    """The dtype the stand-in computes norms and updates of ``dtype`` tensors in: at least fp32."""
    return _compute_dtype(dtype, torch.float32) if dtype in _FLOATS else torch.float32


def _run_closure(closure: Callable[[], Any] | None) -> Any:
    if closure is None:
        return None
    with torch.enable_grad():
        return closure()


class FusedLamb(Optimizer):
    """The bridge's ``FusedLamb`` (LAMB, `arXiv:1904.00962 <https://arxiv.org/abs/1904.00962>`_) on the stand-in.

    The bridge computes the step in closed device kernels; the stand-in follows the reference functions its kernel
    tests compare them to, with plain torch ops on the parameters' device:

    1. With ``max_grad_norm`` (read from the optimizer's defaults, not per group; ``None`` turns it off), the global
       2-norm ``n`` of all gradients (cast to ``dtype`` first, if given) gives the divisor ``c = n / max_grad_norm``
       when ``n > max_grad_norm``, else ``c = 1``; each gradient is read as ``g / c`` (``.grad`` is not changed).
    2. Per group, ``group["step"]`` counts the steps (every step, for every group). Per parameter with a gradient:
       ``exp_avg = beta1 * exp_avg + b * g`` with ``b = 1 - beta1`` (``grad_averaging``) or ``1``;
       ``exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * g**2``;
       ``u = (exp_avg / bc1) / (sqrt(exp_avg_sq / bc2) + eps)`` with ``bc1 = 1 - beta1**step``,
       ``bc2 = 1 - beta2**step`` (both 1 without ``bias_correction``), plus ``weight_decay * w`` when the group's
       ``weight_decay`` is not 0.
    3. ``w -= lr * r * u``, with the trust ratio ``r = ||w|| / ||u||`` (norms before the update) when the group's
       ``weight_decay`` is not 0 or ``use_lamb`` is set and both norms are positive, else ``r = 1``.

    As on the bridge, ``amsgrad=True`` is refused, ``adam_w_mode`` and ``fused`` are stored but change nothing (its
    kernels do not take them), the moments are created as zeros in the parameter's dtype, and ``zero_grad()`` sets
    the gradients to ``None`` (with ``set_grad_none``, and through torch's default without it; an explicit
    ``set_to_none`` wins). 16-bit tensors are computed
    in fp32 and written back in their dtype.
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        bias_correction: bool = True,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-6,
        weight_decay: float = 0.01,
        amsgrad: bool = False,
        adam_w_mode: bool = True,
        grad_averaging: bool = True,
        set_grad_none: bool = True,
        max_grad_norm: float | None = 1.0,
        use_lamb: bool = False,
        fused: bool = False,
        dtype: torch.dtype | None = None,
    ) -> None:
        if amsgrad:
            raise RuntimeError("FusedLamb does not support the AMSGrad variant.")
        defaults = dict(
            lr=lr,
            bias_correction=bias_correction,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            grad_averaging=grad_averaging,
            max_grad_norm=max_grad_norm,
        )
        super().__init__(params, defaults)
        self.fused = fused
        self.adam_w_mode = 1 if adam_w_mode else 0
        self.set_grad_none = set_grad_none
        self.use_lamb = use_lamb
        self.device = self.param_groups[0]["params"][0].device
        self.dtype = dtype

    def zero_grad(self, set_to_none: bool | None = None) -> None:
        # ``set_grad_none`` sets them to None; without it the bridge calls torch's ``zero_grad()``, whose default
        # (torch 2) sets them to None too.
        super().zero_grad(set_to_none=True if set_to_none is None else set_to_none)

    def _clip_divisor(self) -> Tensor | None:
        """``||grads|| / max_grad_norm`` where it exceeds 1, else 1 (a device tensor); ``None`` without clipping."""
        max_grad_norm = self.defaults["max_grad_norm"]
        if max_grad_norm is None:
            return None
        grads = [grad for group in self.param_groups for _, grad in _grads_of(group["params"], "Lamb")]
        if not grads:
            return None
        if self.dtype is not None:
            grads = [grad.to(self.dtype) for grad in grads]
        wide = _wide(grads[0].dtype)
        norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g.to(wide)) for g in grads]))
        return torch.where(norm > max_grad_norm, norm / max_grad_norm, torch.ones_like(norm))

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = _run_closure(closure)
        divisor = self._clip_divisor()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            first_weight = 1.0 - beta1 if group["grad_averaging"] else 1.0
            group["step"] = group.get("step", 0) + 1
            if group["bias_correction"]:
                bc1, bc2 = 1.0 - beta1 ** group["step"], 1.0 - beta2 ** group["step"]
            else:
                bc1 = bc2 = 1.0
            weight_decay = group["weight_decay"]
            _mark_step()
            updates = []
            for param, grad in _grads_of(group["params"], "Lamb"):
                state = self.state[param]
                if not state:
                    state["exp_avg"] = torch.zeros_like(param, memory_format=torch.contiguous_format)
                    state["exp_avg_sq"] = torch.zeros_like(param, memory_format=torch.contiguous_format)
                wide = _wide(param.dtype)
                g = grad.to(wide) if divisor is None else grad.to(wide) / divisor.to(wide)
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.mul_(beta1).add_(g.to(exp_avg.dtype), alpha=first_weight)
                exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1.0 - beta2)
                w = param.to(wide)
                update = (exp_avg.to(wide) / bc1) / ((exp_avg_sq.to(wide) / bc2).sqrt() + group["eps"])
                if weight_decay != 0:
                    update = update + weight_decay * w
                updates.append((param, update, torch.linalg.vector_norm(w), torch.linalg.vector_norm(update)))
            _mark_step()
            adapt = weight_decay != 0 or self.use_lamb
            for param, update, weight_norm, update_norm in updates:
                if adapt:
                    ratio = torch.where(
                        (weight_norm > 0) & (update_norm > 0), weight_norm / update_norm, torch.ones_like(weight_norm)
                    )
                    update = update * ratio
                param.add_((update * -group["lr"]).to(param.dtype))
            _mark_step()
        return loss


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
