"""PLACEHOLDER (issue 10 part B): the stand-in's ``FusedAdamW``, ``FusedSGD`` and ``FusedClipNorm``.

Issue 10 part A writes the bridge-faithful versions of these classes in this module (bias correction, state layout,
step markers); this placeholder only gives the emulated ``habana_frameworks.torch.hpex`` something with the bridge's
names and signatures to re-export until then: torch's fused ``AdamW``/``SGD`` and a 2-norm clip. The merge replaces
this file with part A's.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

__all__ = ["FusedAdamW", "FusedClipNorm", "FusedSGD"]


class FusedAdamW(torch.optim.AdamW):
    """PLACEHOLDER: ``torch.optim.AdamW(fused=True)`` with the bridge's signature and defaults."""

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-6,
        weight_decay: float = 0.0,
        bias_correction: bool = True,
        moments_dtype: Any = None,
    ) -> None:
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, fused=True)


class FusedSGD(torch.optim.SGD):
    """PLACEHOLDER: ``torch.optim.SGD(fused=True)`` with the bridge's signature (``lr`` required)."""

    def __init__(
        self,
        params: Iterable[Any],
        lr: float,
        momentum: float = 0.0,
        weight_decay: float = 0.0,
        dampening: float = 0.0,
        nesterov: bool = False,
    ) -> None:
        super().__init__(
            params,
            lr=lr,
            momentum=momentum,
            weight_decay=weight_decay,
            dampening=dampening,
            nesterov=nesterov,
            fused=True,
        )


class FusedClipNorm:
    """PLACEHOLDER: clips gradients to a total 2-norm of ``max_norm`` and returns the norm before clipping."""

    def __init__(self, parameters: Iterable[torch.Tensor], max_norm: float) -> None:
        self.max_norm = float(max_norm)

    def clip_norm(self, parameters: Iterable[torch.Tensor] | torch.Tensor) -> torch.Tensor:
        params = [parameters] if isinstance(parameters, torch.Tensor) else list(parameters)
        return torch.nn.utils.clip_grad_norm_(params, self.max_norm, norm_type=2.0, foreach=True)
