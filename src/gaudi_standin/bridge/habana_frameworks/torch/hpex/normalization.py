"""``habana_frameworks.torch.hpex.normalization`` on the stand-in: ``FusedClipNorm`` and ``FusedRMSNorm``."""

from __future__ import annotations

from enum import Enum
from typing import Any

import torch
from torch import Tensor

from gaudi_standin.ops.recompute import AutocastState, grads
from gaudi_standin.optimizers import FusedClipNorm

__all__ = ["FusedClipNorm", "FusedRMSNorm", "RmsNormBwdMode"]


class RmsNormBwdMode(Enum):
    """How the bridge's kernel splits its backward (a performance choice: the stand-in's values are the same)."""

    DEFAULT = 0
    STATIC_CASE_WIDTH_PARTITIONING = 1


def _rms_norm(x: Tensor, weight: Tensor, eps: float) -> Tensor:
    """``x * rsqrt(mean(x**2) + eps) * weight`` over the last dimension, in fp32; returned in ``x``'s dtype if the
    weight has it, else in fp32, as the bridge's kernel does."""
    out_dtype = x.dtype if x.dtype == weight.dtype else torch.float32
    with torch.autocast(x.device.type, enabled=False):
        x32 = x.float()
        normed = x32 * torch.rsqrt(x32.pow(2).mean(dim=-1, keepdim=True) + eps)
        return (normed * weight.float()).to(out_dtype)


class FusedRMSNorm(torch.autograd.Function):
    """The bridge's RMS normalization: ``apply(input, weight, eps, use_stages=True, bwd_mode=0, fast_math=False)``.

    ``use_stages``, ``bwd_mode`` and ``fast_math`` choose among the kernel's implementations on a Gaudi; here each
    computes the same fp32 result. Gradients go to the input and the weight.
    """

    @staticmethod
    def forward(
        ctx: Any,
        data_in: Tensor,
        gamma: Tensor,
        eps: float,
        use_stages: bool = True,
        bwd_mode: int | RmsNormBwdMode = 0,
        fast_math: bool = False,
    ) -> Tensor:
        ctx.save_for_backward(data_in, gamma)
        ctx.eps, ctx.autocast = eps, AutocastState.of(data_in)
        return _rms_norm(data_in, gamma, eps)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:
        data_in, gamma = ctx.saved_tensors

        def norm(x: Tensor, weight: Tensor) -> Tensor:
            return _rms_norm(x, weight, ctx.eps)

        grad_in, grad_gamma = grads(norm, (data_in, gamma), ctx.needs_input_grad[:2], grad, ctx.autocast)
        return grad_in, grad_gamma, None, None, None, None
