"""The bridge's fp8 ops: ``hpu::cast_to_fp8_v2``, ``cast_from_fp8``, ``cast_to_fp8_hybrid``, ``fp8_gemm_v2``,
``softmax_fp8``.

Reference formulas (scales multiply, as in the bridge's kernels; each has a tensor, ``.scalar`` and
``.scalar_list`` overload where the bridge has one, ``scale_shape`` reshaping a per-channel scale):

- ``cast_to_fp8_v2(x, scale, stochastic_rounding, is_amax, dtype)``: ``(x * scale)`` saturated to ``dtype``'s range
  (``float8_e5m2`` when ``dtype`` is None), and ``amax = max |x|`` in fp32 (a 0-d tensor; of shape ``[0]`` without
  ``is_amax``). The stand-in rounds to nearest, also where the device would round stochastically.
- ``cast_from_fp8(x, scale, out_dtype)``: ``x * scale`` in ``out_dtype``.
- ``fp8_gemm_v2(A, trans_A, B, trans_B, D, out_dtype, A_scale_inv, B_scale_inv, bias, accumulate)``:
  ``(op(A) * A_scale_inv) @ (op(B) * B_scale_inv) + bias (+ D if accumulate)`` computed in fp32, in ``out_dtype``.
- ``softmax_fp8(x, dim, input_scale, output_scale, inv_attn_heads, fused_add)``: ``softmax(x * inv_attn_heads +
  fused_add)``; without ``input_scale`` in bf16, with it ``x`` is first quantized to fp8 by ``1 / input_scale`` and
  the result quantized to ``float8_e4m3fn`` by ``1 / output_scale``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from gaudi_standin.ops.registry import define

__all__ = ["cast_from_fp8", "cast_to_fp8_v2", "fp8_gemm_v2", "saturate", "softmax_fp8"]

Scale = Tensor | float | Sequence[float] | None


def _scale(scale: Scale, like: Tensor, scale_shape: Sequence[int] | None) -> Tensor | float:
    """The scale as a number or an fp32 tensor (reshaped to ``scale_shape`` if given) on ``like``'s device."""
    if scale is None:
        return 1.0
    if isinstance(scale, float | int):
        return float(scale)
    tensor = scale.float() if isinstance(scale, Tensor) else torch.tensor(list(scale), device=like.device)
    return tensor.reshape(scale_shape) if scale_shape is not None and tensor.numel() > 1 else tensor


def saturate(x: Tensor, dtype: torch.dtype) -> Tensor:
    """``x`` cast to the fp8 ``dtype``, clamped to its finite range (the device saturates instead of overflowing)."""
    limit = torch.finfo(dtype).max
    return x.float().clamp(-limit, limit).to(dtype)


def _to_fp8(
    input: Tensor, scale: Scale, is_amax: bool, dtype: torch.dtype | None, scale_shape: Sequence[int] | None
) -> tuple[Tensor, Tensor]:
    dtype = dtype or torch.float8_e5m2
    if input.dtype in (torch.float8_e5m2, torch.float8_e4m3fn) and (is_amax or dtype != input.dtype):
        raise RuntimeError("CastToFp8V2: an fp8 input keeps its dtype and has no amax.")
    out = saturate(input.float() * _scale(scale, input, scale_shape), dtype)
    amax = input.abs().amax().float() if is_amax else input.new_empty((0,), dtype=torch.float32)
    return out, amax


def cast_to_fp8_v2(
    input: Tensor,
    scale: Scale = None,
    stochastic_rounding: bool = False,
    is_amax: bool = False,
    dtype: torch.dtype | None = None,
    scale_shape: Sequence[int] | None = None,
) -> tuple[Tensor, Tensor]:
    return _to_fp8(input, scale, is_amax, dtype, scale_shape)


def cast_from_fp8(
    input: Tensor, scale: Scale, out_dtype: torch.dtype, scale_shape: Sequence[int] | None = None
) -> Tensor:
    return (input.float() * _scale(scale, input, scale_shape)).to(out_dtype)


def cast_to_fp8_hybrid(
    input: Tensor,
    scale_152: Tensor | None = None,
    scale_143: Tensor | None = None,
    stochastic_rounding: bool = False,
    is_amax: bool = False,
) -> tuple[Tensor, Tensor, Tensor]:
    out_152, amax = _to_fp8(input, scale_152, is_amax, torch.float8_e5m2, None)
    return out_152, _to_fp8(input, scale_143, False, torch.float8_e4m3fn, None)[0], amax


def fp8_gemm_v2(
    A: Tensor,
    trans_A: bool,
    B: Tensor,
    trans_B: bool,
    D: Tensor | None,
    out_dtype: torch.dtype,
    A_scale_inv: Scale = None,
    B_scale_inv: Scale = None,
    bias: Tensor | None = None,
    accumulate: bool = False,
    B_scale_shape: Sequence[int] | None = None,
) -> Tensor:
    a = A.float() * _scale(A_scale_inv, A, None)
    b = B.float() * _scale(B_scale_inv, B, B_scale_shape)
    out = torch.matmul(a.transpose(-2, -1) if trans_A else a, b.transpose(-2, -1) if trans_B else b)
    if bias is not None:
        out = out + bias.float()
    if accumulate:
        if D is None:
            raise RuntimeError("Fp8GemmV2: accumulate=True needs the accumulation tensor D.")
        out = out + D.float()
    return out.to(out_dtype)


def softmax_fp8(
    input: Tensor,
    dim: int,
    input_scale: Scale = None,
    output_scale: Scale = None,
    inv_attn_heads: Scale = None,
    fused_add: Tensor | None = None,
) -> Tensor:
    x = input.float()
    if input_scale is not None:
        in_scale = _scale(input_scale, input, None)
        x = saturate(x / in_scale, torch.float8_e4m3fn).float() * in_scale
    x = x * _scale(inv_attn_heads, input, None)
    if fused_add is not None:
        x = x + fused_add.float()
    probs = torch.softmax(x, dim=dim)
    if input_scale is None:
        return probs.to(torch.bfloat16)
    return saturate(probs / _scale(output_scale, input, None), torch.float8_e4m3fn)


_CAST = "bool stochastic_rounding=False, bool is_amax=False, ScalarType? dtype=None, int[]? scale_shape=None"
define(f"cast_to_fp8_v2(Tensor input, Tensor? scale=None, {_CAST}) -> (Tensor, Tensor)", cast_to_fp8_v2)
define(f"cast_to_fp8_v2.scalar(Tensor input, float scale, {_CAST}) -> (Tensor, Tensor)", cast_to_fp8_v2)
define(f"cast_to_fp8_v2.scalar_list(Tensor input, float[] scale, {_CAST}) -> (Tensor, Tensor)", cast_to_fp8_v2)
_FROM = "ScalarType out_dtype, int[]? scale_shape=None) -> Tensor"
define(f"cast_from_fp8(Tensor input, Tensor? scale, {_FROM}", cast_from_fp8)
define(f"cast_from_fp8.scalar(Tensor input, float scale, {_FROM}", cast_from_fp8)
define(f"cast_from_fp8.scalar_list(Tensor input, float[] scale, {_FROM}", cast_from_fp8)
define(
    "cast_to_fp8_hybrid(Tensor input, Tensor? scale_152=None, Tensor? scale_143=None, bool stochastic_rounding=False,"
    " bool is_amax=False) -> (Tensor, Tensor, Tensor)",
    cast_to_fp8_hybrid,
)
_GEMM = "Tensor A, bool trans_A, Tensor B, bool trans_B, Tensor? D, ScalarType out_dtype"
_TAIL = "Tensor? bias=None, bool accumulate=False, int[]? B_scale_shape=None) -> Tensor"
define(f"fp8_gemm_v2({_GEMM}, Tensor? A_scale_inv=None, Tensor? B_scale_inv=None, {_TAIL}", fp8_gemm_v2)
define(f"fp8_gemm_v2.scalar({_GEMM}, float A_scale_inv, float B_scale_inv, {_TAIL}", fp8_gemm_v2)
define(f"fp8_gemm_v2.scalar_list({_GEMM}, float[] A_scale_inv, float[] B_scale_inv, {_TAIL}", fp8_gemm_v2)
_SOFTMAX = "Tensor input, int dim"
define(
    f"softmax_fp8({_SOFTMAX}, Tensor? input_scale=None, Tensor? output_scale=None, Tensor? inv_attn_heads=None,"
    " Tensor? fused_add=None) -> Tensor",
    softmax_fp8,
)
define(
    f"softmax_fp8.Scalar_scales({_SOFTMAX}, float input_scale, float output_scale, Tensor? inv_attn_heads=None,"
    " Tensor? fused_add=None) -> Tensor",
    softmax_fp8,
)
define(
    f"softmax_fp8.Scalar({_SOFTMAX}, float input_scale, float output_scale, float inv_attn_heads,"
    " Tensor? fused_add=None) -> Tensor",
    softmax_fp8,
)
