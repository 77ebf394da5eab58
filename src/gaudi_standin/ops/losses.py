"""``hpex.kernels.CTCLoss`` and ``hpex.kernels.CustomSoftmax``: the bridge's autograd functions over its custom ops.

``CTCLoss.apply(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False)``
is ``torch.nn.functional.ctc_loss`` with the same arguments (``hpu::ctc_loss_custom`` and its backward);
``CustomSoftmax.apply(input, flavor)`` is a softmax over the last dimension whose ``flavor`` (0: exact exponent, 1: a
faster approximation on the device) changes the device's accuracy, not the stand-in's result; its backward is
softmax's, computed in bf16 as the bridge's (the device runs the kernel for bf16 only).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor
from torch.nn._reduction import get_enum

import gaudi_standin.ops.attention  # noqa: F401 (defines the ops called here)

__all__ = ["CTCLoss", "CustomSoftmax"]


class CTCLoss(torch.autograd.Function):
    """The connectionist temporal classification loss, reduced as ``reduction`` says; gradient for ``log_probs``."""

    @staticmethod
    def forward(
        ctx: Any,
        log_probs: Tensor,
        targets: Tensor,
        input_lengths: Tensor,
        target_lengths: Tensor,
        blank: int = 0,
        reduction: str = "mean",
        zero_infinity: bool = False,
    ) -> Tensor:
        mode = get_enum(reduction)
        loss, alpha = torch.ops.hpu.ctc_loss_custom(
            log_probs, targets, input_lengths, target_lengths, blank, mode, zero_infinity
        )
        ctx.save_for_backward(log_probs, targets, input_lengths, target_lengths, loss, alpha)
        ctx.blank, ctx.reduction, ctx.zero_infinity = blank, mode, zero_infinity
        return loss

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:
        log_probs, targets, input_lengths, target_lengths, loss, alpha = ctx.saved_tensors
        grad_log_probs = torch.ops.hpu.ctc_loss_custom_backward(
            grad,
            log_probs,
            targets,
            input_lengths,
            target_lengths,
            loss,
            alpha,
            ctx.blank,
            ctx.reduction,
            ctx.zero_infinity,
        )
        return grad_log_probs, None, None, None, None, None, None


class CustomSoftmax(torch.autograd.Function):
    """The device's approximate softmax over the last dimension (``flavor`` 0 or 1)."""

    @staticmethod
    def forward(ctx: Any, inp: Tensor, flavor: int) -> Tensor:
        result = torch.ops.hpu.custom_softmax(inp, flavor)
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None]:
        (result,) = ctx.saved_tensors
        return torch._softmax_backward_data(grad, result, result.dim() - 1, torch.bfloat16), None
