"""``hpu::convert_from_uint4`` and ``hpu::convert_from_int4``: dequantize 4-bit weights packed eight to an ``int32``.

``input`` (``[rows, cols / 8]``, ``int32``) holds value ``j`` of each group of eight in bits ``4j..4j+3`` (the
lowest first, as optimum-habana's AWQ packing writes them); ``scale`` (``[groups, cols]``) and the packed
``zero_point`` (``[groups, cols / 8]``, or ``None`` for 0) apply to ``rows / groups`` consecutive rows each. The
result is ``(value - zero) * scale`` in ``out_dtype``, of shape ``[rows, cols]``; ``int4`` reads the values as signed
(-8..7), ``uint4`` as unsigned (0..15).
"""

from __future__ import annotations

import torch
from torch import Tensor

from gaudi_standin.ops.registry import define

__all__ = ["convert_from_int4", "convert_from_uint4", "unpack_4bit"]

_SHIFTS = tuple(range(0, 32, 4))


def unpack_4bit(packed: Tensor, signed: bool) -> Tensor:
    """The eight 4-bit values of each ``int32`` along the last dimension, lowest bits first."""
    shifts = torch.tensor(_SHIFTS, dtype=torch.int32, device=packed.device)
    nibbles = torch.bitwise_and(torch.bitwise_right_shift(packed.to(torch.int32)[..., None], shifts), 15)
    if signed:
        nibbles = torch.where(nibbles >= 8, nibbles - 16, nibbles)
    return nibbles.reshape(*packed.shape[:-1], packed.shape[-1] * 8)


def _convert(input: Tensor, scale: Tensor, zero_point: Tensor | None, out_dtype: torch.dtype, signed: bool) -> Tensor:
    values = unpack_4bit(input, signed).float()
    if zero_point is not None:
        values = values - unpack_4bit(zero_point, signed).float().repeat_interleave(
            input.shape[0] // zero_point.shape[0], dim=0
        )
    rows_per_group = input.shape[0] // scale.shape[0]
    return (values * scale.float().repeat_interleave(rows_per_group, dim=0)).to(out_dtype)


def convert_from_uint4(input: Tensor, scale: Tensor, zero_point: Tensor | None, out_dtype: torch.dtype) -> Tensor:
    return _convert(input, scale, zero_point, out_dtype, signed=False)


def convert_from_int4(input: Tensor, scale: Tensor, zero_point: Tensor | None, out_dtype: torch.dtype) -> Tensor:
    return _convert(input, scale, zero_point, out_dtype, signed=True)


_ARGS = "(Tensor input, Tensor scale, Tensor? zero_point, ScalarType out_dtype) -> Tensor"
define(f"convert_from_uint4{_ARGS}", convert_from_uint4)
define(f"convert_from_int4{_ARGS}", convert_from_int4)
