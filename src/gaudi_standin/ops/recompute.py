"""Backward by recomputation, for the emulated fused kernels (``hpex.kernels``, ``FusedRMSNorm``).

Each kernel is a ``torch.autograd.Function``, as in the bridge, whose forward is a plain torch computation; its
backward runs that computation again under autograd and takes its vector-Jacobian product, so the gradients are
exactly those of the reference ops. The forward's autocast state is replayed, so both passes compute alike.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import torch
from torch import Tensor


class AutocastState(NamedTuple):
    """Whether autocast was on for a device type, and its dtype, when a kernel's forward ran."""

    device_type: str
    enabled: bool
    dtype: torch.dtype

    @classmethod
    def of(cls, tensor: Tensor) -> AutocastState:
        device_type = tensor.device.type
        return cls(device_type, torch.is_autocast_enabled(device_type), torch.get_autocast_dtype(device_type))

    def replay(self) -> torch.autocast:
        return torch.autocast(self.device_type, dtype=self.dtype, enabled=self.enabled)


def grads(
    compute: Callable[..., Tensor],
    inputs: Sequence[Tensor],
    needed: Sequence[bool],
    grad_output: Tensor,
    autocast: AutocastState,
) -> list[Tensor | None]:
    """The gradients of ``compute(*inputs)`` for the ``needed`` inputs, given the output's gradient (others: None)."""
    with torch.enable_grad(), autocast.replay():
        leaves = [t.detach().requires_grad_(need) for t, need in zip(inputs, needed, strict=True)]
        output = compute(*leaves)
        wanted = [leaf for leaf, need in zip(leaves, needed, strict=True) if need]
        found = iter(torch.autograd.grad(output, wanted, grad_output, allow_unused=True) if wanted else ())
    return [next(found) if need else None for need in needed]
