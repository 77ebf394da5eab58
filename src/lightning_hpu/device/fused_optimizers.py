"""Fused optimizers and gradient clipping: Habana's fused kernels on a Gaudi, the same formulas on the stand-in.

Habana's ``FusedAdamW`` defaults differ from ``torch.optim.AdamW`` (``eps=1e-6`` instead of ``1e-8``,
``weight_decay=0.0`` instead of ``1e-2``), and so does its update (``eps`` is added before the bias correction).
These helpers take the fused defaults and always hand every hyperparameter to the backend explicitly, so the same
call trains with the same settings on a Gaudi and on the CPU stand-in, whose ``FusedAdamW``/``FusedSGD``
(``gaudi_standin.optimizers``) compute the bridge's update and keep its optimizer state.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from torch import Tensor
from torch.optim import Optimizer

from lightning_hpu.runtime import require_backend


def _check_non_negative(**values: float) -> None:
    for name, value in values.items():
        if not value >= 0.0:
            raise ValueError(f"`{name}={value!r}` must be a non-negative number.")


def fused_adamw(
    params: Iterable[Any],
    lr: float = 1e-3,
    betas: tuple[float, float] = (0.9, 0.999),
    eps: float = 1e-6,
    weight_decay: float = 0.0,
) -> Optimizer:
    """AdamW with decoupled weight decay: Habana's ``FusedAdamW`` (or the stand-in's, which computes the same).

    The defaults are ``FusedAdamW``'s (``eps=1e-6``, ``weight_decay=0.0``); pass ``eps=1e-8, weight_decay=1e-2``
    to match ``torch.optim.AdamW``'s.
    """
    _check_non_negative(lr=lr, weight_decay=weight_decay)
    if not eps > 0.0:
        raise ValueError(f"`eps={eps!r}` must be positive, e.g. 1e-6.")
    if len(betas) != 2 or not all(0.0 <= beta < 1.0 for beta in betas):
        raise ValueError(f"`betas={betas!r}` must be two numbers in [0, 1), e.g. (0.9, 0.999).")
    return require_backend().fused_adamw(
        params, lr=lr, betas=(float(betas[0]), float(betas[1])), eps=eps, weight_decay=weight_decay
    )


def fused_sgd(
    params: Iterable[Any],
    lr: float,
    momentum: float = 0.0,
    weight_decay: float = 0.0,
    dampening: float = 0.0,
    nesterov: bool = False,
) -> Optimizer:
    """SGD: Habana's ``FusedSGD`` (or the stand-in's, which computes the same; ``lr`` is required, as in both)."""
    _check_non_negative(lr=lr, momentum=momentum, weight_decay=weight_decay, dampening=dampening)
    if nesterov and (momentum <= 0.0 or dampening != 0.0):
        raise ValueError("`nesterov=True` needs `momentum` > 0 and `dampening=0`.")
    return require_backend().fused_sgd(
        params, lr=lr, momentum=momentum, weight_decay=weight_decay, dampening=dampening, nesterov=nesterov
    )


def clip_grad_norm(parameters: Iterable[Tensor], max_norm: float) -> Tensor:
    """Scale gradients in place to a total 2-norm of at most ``max_norm`` with the device's fused clip.

    Returns the total norm before clipping. ``HPUPrecisionPlugin`` calls this when the Trainer clips by norm.
    """
    if not max_norm > 0.0:
        raise ValueError(f"`max_norm={max_norm!r}` must be positive.")
    return require_backend().clip_grad_norm(parameters, float(max_norm))
