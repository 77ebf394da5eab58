"""``hpu::rotary_pos_embedding`` and ``hpu::rotary_pos_embedding_backward``, with autograd as in the bridge.

``rotary_pos_embedding(input, sin, cos, position_ids, offset, mode)`` is ``input * cos + rotate(input) * sin``
(``mode`` 0: BLOCKWISE, ``rotate([x1, x2]) = [-x2, x1]``; 1: PAIRWISE, each pair ``(a, b) -> (-b, a)``), after
skipping ``offset`` leading values of the tables' last dimension and taking the rows ``position_ids`` (BLOCKWISE),
as :func:`gaudi_standin.ops.rotary.rotary_embedding` computes it. The rotation is antisymmetric, so the
backward is ``grad * cos - rotate(grad * sin)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from gaudi_standin.ops.registry import define
from gaudi_standin.ops.rotary import RotaryPosEmbeddingMode, at_positions, common_dtype, rotate_half, rotate_pairs

__all__ = ["rotary_pos_embedding", "rotary_pos_embedding_backward"]


def _prepared(
    x: Tensor, sin: Tensor, cos: Tensor, position_ids: Tensor | None, offset: int, mode: int
) -> tuple[Tensor, Tensor, Tensor, Callable[[Tensor], Tensor]]:
    """``x``, ``cos`` and ``sin`` in the computation's dtype at the rows used, and the rotation of ``mode``."""
    kind = RotaryPosEmbeddingMode(mode)
    x, cos, sin = common_dtype(x, cos, sin)
    if kind is RotaryPosEmbeddingMode.PAIRWISE:
        if position_ids is not None:
            raise NotImplementedError("rotary_pos_embedding: the bridge defines position_ids for BLOCKWISE only.")
        return x, cos, sin, rotate_pairs
    if offset:
        cos, sin = cos[..., offset : offset + x.shape[-1]], sin[..., offset : offset + x.shape[-1]]
    if position_ids is not None:
        cos, sin = at_positions(cos, position_ids), at_positions(sin, position_ids)
    return x, cos, sin, rotate_half


def rotary_pos_embedding(
    input: Tensor, sin: Tensor, cos: Tensor, position_ids: Tensor | None, offset: int, mode: int
) -> Tensor:
    x, cos, sin, rotate = _prepared(input, sin, cos, position_ids, offset, mode)
    return x * cos + rotate(x) * sin


def rotary_pos_embedding_backward(
    grad_in: Tensor, sin: Tensor, cos: Tensor, position_ids: Tensor | None, offset: int, mode: int
) -> Tensor:
    grad, cos, sin, rotate = _prepared(grad_in, sin, cos, position_ids, offset, mode)
    return grad * cos - rotate(grad * sin)


def _setup_context(ctx: Any, inputs: tuple[Any, ...], output: Tensor) -> None:
    _, sin, cos, position_ids, offset, mode = inputs
    ctx.save_for_backward(sin, cos, position_ids)
    ctx.offset, ctx.mode, ctx.input_dtype = offset, mode, inputs[0].dtype


def _backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, None, None, None, None, None]:
    sin, cos, position_ids = ctx.saved_tensors
    grad_input = torch.ops.hpu.rotary_pos_embedding_backward(grad, sin, cos, position_ids, ctx.offset, ctx.mode)
    return grad_input.to(ctx.input_dtype), None, None, None, None, None


_ARGS = "Tensor sin, Tensor cos, Tensor? position_ids, int offset, int mode) -> Tensor"
define(f"rotary_pos_embedding(Tensor input, {_ARGS}", rotary_pos_embedding)
define(f"rotary_pos_embedding_backward(Tensor grad_in, {_ARGS}", rotary_pos_embedding_backward)
torch.library.register_autograd("hpu::rotary_pos_embedding", _backward, setup_context=_setup_context)
