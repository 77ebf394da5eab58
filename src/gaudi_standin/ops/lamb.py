"""The bridge's fused LAMB kernels: ``hpu::optimizer_lamb_fused_norm``, ``optimizer_lamb_phase1``, ``..._phase2``.

The bridge's ``FusedLamb.step`` calls them in this order; the formulas are those of the stand-in's
:class:`~gaudi_standin.optimizers.FusedLamb` (the bridge's kernel tests' reference):

- ``fused_norm(grads, max_norm)``: ``[n / max_norm]`` if the global 2-norm ``n`` exceeds ``max_norm``, else ``[1]``,
  each step rounded to the gradients' dtype as the kernel's;
- ``phase1``: with ``g = grad / clip``, ``m = beta1 m + b g`` (``b = 1 - beta1`` if ``grad_averaging`` else 1),
  ``v = beta2 v + (1 - beta2) g^2``, the step ``u = (m / bc1) / (sqrt(v / bc2) + eps) + weight_decay w``; it writes
  ``m``, ``v``, ``u`` and the norms ``||w||``, ``||u||``;
- ``phase2``: ``w += neg_step * r * u`` with the trust ratio ``r = ||w|| / ||u||`` when ``wd != 0`` or ``use_lamb``
  and both norms are positive, else 1.
"""

from __future__ import annotations

import torch
from torch import Tensor

from gaudi_standin.ops.registry import define

__all__ = ["optimizer_lamb_fused_norm", "optimizer_lamb_phase1", "optimizer_lamb_phase2"]


def optimizer_lamb_fused_norm(grad: list[Tensor], max_norm: float) -> Tensor:
    """Every step in the gradients' dtype, as the bridge's kernel (``optimizer_lamb_gen.cpp``: a sum of squares per
    gradient, their sum, its square root and the division, each output in that dtype) and its tests' reference."""
    dtype = grad[0].dtype
    total = torch.zeros(1, dtype=dtype, device=grad[0].device)
    for g in grad:
        total.add_(g.to(dtype).pow(2).sum())
    norm = total.sqrt()
    return torch.where(norm > max_norm, norm / max_norm, torch.ones_like(norm))


def _fake_fused_norm(grad: list[Tensor], max_norm: float) -> Tensor:
    return grad[0].new_empty((1,))


def optimizer_lamb_phase1(
    gradients: list[Tensor],
    weights: list[Tensor],
    exp_avg: list[Tensor],
    exp_avg_sq: list[Tensor],
    out_weight_norms: list[Tensor],
    out_adam_norms: list[Tensor],
    out_adam_steps: list[Tensor],
    clip_global_grad_norm: Tensor,
    grad_averaging: int,
    beta1: float,
    beta2: float,
    epsilon: float,
    bias_correction1: Tensor,
    bias_correction2: Tensor,
    weight_decay: float,
) -> None:
    first_weight = 1.0 - beta1 if grad_averaging else 1.0
    for i, (grad, weight) in enumerate(zip(gradients, weights, strict=False)):
        g = grad.float() / clip_global_grad_norm.float()
        m = exp_avg[i].float() * beta1 + g * first_weight
        v = exp_avg_sq[i].float() * beta2 + g * g * (1.0 - beta2)
        w = weight.float()
        step = (m / bias_correction1.float()) / ((v / bias_correction2.float()).sqrt() + epsilon)
        if weight_decay != 0:
            step = step + weight_decay * w
        exp_avg[i].copy_(m)
        exp_avg_sq[i].copy_(v)
        out_adam_steps[i].copy_(step)
        out_weight_norms[i].copy_(torch.linalg.vector_norm(w).reshape(out_weight_norms[i].shape))
        out_adam_norms[i].copy_(torch.linalg.vector_norm(step).reshape(out_adam_norms[i].shape))


def _fake_phase1(*args: object) -> None:
    return None


def optimizer_lamb_phase2(
    weights: list[Tensor],
    adam_norms: list[Tensor],
    weight_norms: list[Tensor],
    adam_steps: list[Tensor],
    neg_step: Tensor,
    wd: float,
    use_lamb: bool,
) -> None:
    adapt = wd != 0 or use_lamb
    for weight, adam_norm, weight_norm, step in zip(weights, adam_norms, weight_norms, adam_steps, strict=False):
        ratio = torch.ones_like(weight_norm.float())
        if adapt:
            positive = (weight_norm > 0) & (adam_norm > 0)
            ratio = torch.where(positive, weight_norm.float() / adam_norm.float(), ratio)
        weight.copy_(weight.float() + neg_step.float() * ratio * step.float())


def _fake_phase2(*args: object) -> None:
    return None


define(
    "optimizer_lamb_fused_norm(Tensor[] grad, float max_norm) -> Tensor", optimizer_lamb_fused_norm, _fake_fused_norm
)
define(
    "optimizer_lamb_phase1(Tensor[] gradients, Tensor[] weights, Tensor(a!)[] exp_avg, Tensor(b!)[] exp_avg_sq,"
    " Tensor(c!)[] out_weight_norms, Tensor(d!)[] out_adam_norms, Tensor(e!)[] out_adam_steps,"
    " Tensor clip_global_grad_norm, int grad_averaging, float beta1, float beta2, float epsilon,"
    " Tensor bias_correction1, Tensor bias_correction2, float weight_decay) -> ()",
    optimizer_lamb_phase1,
    _fake_phase1,
)
define(
    "optimizer_lamb_phase2(Tensor(a!)[] weights, Tensor[] adam_norms, Tensor[] weight_norms, Tensor[] adam_steps,"
    " Tensor neg_step, float wd, bool use_lamb) -> ()",
    optimizer_lamb_phase2,
    _fake_phase2,
)
