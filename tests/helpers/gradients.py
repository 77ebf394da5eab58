"""Checking a kernel's backward against a reference computation: fresh leaves for the reference, gradients compared."""

from __future__ import annotations

import torch
from torch import Tensor


def fresh_leaves(*tensors: Tensor) -> list[Tensor]:
    """Fresh leaves with the same values, for a reference computation of their own."""
    return [t.detach().clone().requires_grad_() for t in tensors]


def assert_grads_close(ours: list[Tensor], theirs: list[Tensor], **tol: float) -> None:
    """Each of ``ours`` has a gradient on its own device, close to that of the matching reference leaf."""
    for mine, ref in zip(ours, theirs, strict=True):
        assert mine.grad is not None and ref.grad is not None
        assert mine.grad.device == mine.device
        torch.testing.assert_close(mine.grad, ref.grad, **tol)
