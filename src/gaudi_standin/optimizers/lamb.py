"""The bridge's ``FusedLamb`` on the stand-in, computed as the bridge's kernel tests' reference functions."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import Tensor
from torch.optim import Optimizer

from gaudi_standin.optimizers.common import (
    _grads_of,
    _mark_step,
    _run_closure,
    _wide,
)


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
