"""The hyperparameters the seam's fused optimizers take, declared once for the interface and its implementation.

:meth:`HPUBackend.fused_adamw <lightning_hpu.runtime.HPUBackend.fused_adamw>` and ``fused_sgd`` take them as
``**settings: Unpack[...]``; every one is required (:mod:`lightning_hpu.device.fused_optimizers` fills in the
defaults), and mypy checks the backend's call of the bridge's ``FusedAdamW``/``FusedSGD`` against the typed stub.
"""

from __future__ import annotations

from typing import TypedDict


class AdamWSettings(TypedDict):
    """``FusedAdamW``'s hyperparameters."""

    lr: float
    betas: tuple[float, float]
    eps: float
    weight_decay: float


class SGDSettings(TypedDict):
    """``FusedSGD``'s hyperparameters."""

    lr: float
    momentum: float
    weight_decay: float
    dampening: float
    nesterov: bool


__all__ = ["AdamWSettings", "SGDSettings"]
