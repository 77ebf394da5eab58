"""``habana_frameworks.torch.hpex.kernels`` on the stand-in: ``FusedSDPA``, the rotary-embedding helpers
(formulas in :mod:`gaudi_standin.ops.rotary`) and ``CTCLoss``, ``CustomSoftmax`` (:mod:`gaudi_standin.ops.losses`),
with the bridge's signatures and semantics (1.19), computed with torch ops on the inputs' device. Each is an
autograd function whose backward recomputes the forward. ``FusedSDPA`` is ``scaled_dot_product_attention``:
``softmax_mode="fast"`` and ``"None"`` are both exact here, and recomputation (``recompute_mode``,
``hpu.sdp_kernel``) changes which arguments the bridge accepts, not values.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from gaudi_standin.bridge.habana_frameworks.torch import hpu
from gaudi_standin.ops.losses import CTCLoss, CustomSoftmax
from gaudi_standin.ops.recompute import AutocastState, grads
from gaudi_standin.ops.rotary import RotaryPosEmbeddingMode, rotary_embedding, rotary_embedding_from_cache

__all__ = [
    "CTCLoss",
    "CustomSoftmax",
    "FusedSDPA",
    "RotaryPosEmbeddingHelperV1",
    "RotaryPosEmbeddingHelperV2",
    "RotaryPosEmbeddingHelperV3",
    "RotaryPosEmbeddingMode",
    "apply_rotary_pos_emb",
]


def _is_gqa(q: Tensor, k: Tensor) -> bool:
    """Grouped-query attention as the bridge detects it: 4-D inputs, fewer key/value heads than query heads, not 1."""
    return q.dim() == 4 and k.shape[1] != q.shape[1] and k.shape[1] != 1


def _grouped_kv(q: Tensor, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
    """Keys and values, repeated under grouped-query attention so that each group of query heads meets its own."""
    if not _is_gqa(q, k):
        return k, v
    if q.shape[1] % k.shape[1]:
        raise ValueError(
            f"FusedSDPA: {q.shape[1]} query heads cannot be grouped over {k.shape[1]} key/value heads"
            " (the query heads must be a multiple of them)."
        )
    group = q.shape[1] // k.shape[1]
    return k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)


def _valid_length_mask(q: Tensor, k: Tensor, valid_seq_len: Tensor, padding: str) -> Tensor:
    """Causal mask that also hides each batch entry's padded keys (before the valid ones if ``"left"``)."""
    target, source = q.shape[-2], k.shape[-2]
    rows = torch.arange(target, device=q.device)[:, None]
    cols = torch.arange(source, device=q.device)
    causal = cols[None, :] <= rows  # [L, S], aligned at the top left as torch's is_causal
    lengths = valid_seq_len.reshape(-1, 1).to(cols.dtype)  # [B, 1]
    valid = cols >= source - lengths if padding == "left" else cols < lengths  # [B, S]
    mask = causal[None, :, :] & valid[:, None, :]  # [B, L, S]
    return mask[:, None] if q.dim() == 4 else mask


def _probabilities(q: Tensor, k: Tensor, attn_mask: Tensor | None, is_causal: bool, scale: float) -> Tensor:
    """softmax(q k^T * scale + mask) in fp32; a row with no key to attend to is zeros, as in torch's SDPA."""
    scores = torch.matmul(q.float(), k.float().transpose(-2, -1)) * scale
    if is_causal:
        target, source = scores.shape[-2:]
        causal = torch.ones(target, source, dtype=torch.bool, device=scores.device).tril()
        scores = scores.masked_fill(~causal, -math.inf)
    if attn_mask is not None:
        scores = scores.masked_fill(~attn_mask, -math.inf) if attn_mask.dtype == torch.bool else scores + attn_mask
    empty = scores.isneginf().all(dim=-1, keepdim=True)
    return torch.softmax(scores.masked_fill(empty, 0.0), dim=-1).masked_fill(empty, 0.0)


def _attend(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    attn_mask: Tensor | None,
    dropout_p: float,
    is_causal: bool,
    scale: float,
    dropout_mask: Tensor | None,
) -> tuple[Tensor, Tensor | None]:
    """The attention output, and the probabilities when they were computed by hand (dropout kept by its mask)."""
    k, v = _grouped_kv(q, k, v)
    if dropout_mask is None:
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal, scale=scale)
        return out, None
    probs = _probabilities(q, k, attn_mask, is_causal, scale)
    kept = probs * dropout_mask * (0.0 if dropout_p >= 1.0 else 1.0 / (1.0 - dropout_p))
    return torch.matmul(kept, v.float()).to(q.dtype), probs.to(q.dtype)


def _dropout_mask(q: Tensor, k: Tensor, v: Tensor, dropout_p: float) -> Tensor:
    """The kept positions (1) of the attention probabilities, as ``int8``; of shape ``[1]`` without dropout."""
    if dropout_p == 0.0:
        return torch.zeros(1, dtype=torch.int8, device=q.device)
    k, v = _grouped_kv(q, k, v)
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    shape = (*batch, q.shape[-2], k.shape[-2])
    return (torch.rand(shape, device=q.device) >= dropout_p).to(torch.int8)


def _check_sdpa_arguments(
    requires_backward: bool,
    attn_mask: Tensor | None,
    is_causal: bool,
    softmax_mode: str,
    recompute: bool,
    valid_seq_len: Tensor | None,
    seq_padding_type: str,
    return_dropout_mask: bool,
) -> None:
    """Refuse what the bridge's FusedSDPA refuses (its asserts), and a mask given together with ``is_causal``."""
    if recompute and requires_backward and softmax_mode == "fast" and not is_causal:
        raise AssertionError("FusedSDPA: softmax_mode='fast' trains with recomputation only with is_causal=True.")
    if valid_seq_len is not None and not (is_causal and not requires_backward and attn_mask is None):
        raise AssertionError("FusedSDPA: valid_seq_len works only in inference, with is_causal=True and no attn_mask.")
    if recompute and return_dropout_mask:
        raise AssertionError(
            "FusedSDPA: return_dropout_mask needs recomputation off (recompute_mode=False, or hpu.sdp_kernel)."
        )
    if attn_mask is not None and is_causal:
        raise ValueError("FusedSDPA: pass either attn_mask or is_causal=True, not both.")
    if seq_padding_type not in ("left", "right"):
        raise ValueError(f"FusedSDPA: seq_padding_type must be 'left' or 'right', not {seq_padding_type!r}.")


class FusedSDPA(torch.autograd.Function):
    """The bridge's fused scaled-dot-product attention: ``softmax(q k^T * scale + mask) v``, with its arguments.

    ``scale`` defaults to ``1/sqrt(head_dim)``. Keys and values may have fewer heads than the queries (grouped or
    multi-query attention). ``valid_seq_len`` (inference with ``is_causal`` only) hides each batch entry's padded
    keys, on the ``seq_padding_type`` side. ``return_attn_probs`` (inference only) also returns the probabilities
    before dropout; ``return_dropout_mask`` (without recomputation) the kept positions as ``int8``.
    """

    @staticmethod
    def forward(
        ctx: Any,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        attn_mask: Tensor | None = None,
        dropout_p: float = 0.0,
        is_causal: bool = False,
        scale: float | None = None,
        softmax_mode: str = "None",
        recompute_mode: bool | None = None,
        valid_seq_len: Tensor | None = None,
        seq_padding_type: str = "left",
        return_dropout_mask: bool = False,
        return_attn_probs: bool = False,
    ) -> Tensor | tuple[Tensor, ...]:
        requires_backward = q.requires_grad or k.requires_grad or v.requires_grad
        softmax_mode, seq_padding_type = softmax_mode.lower(), seq_padding_type.lower()
        scale = 1.0 / math.sqrt(q.size(-1)) if scale is None else scale
        recompute = hpu.recompute_sdp_enabled() if recompute_mode is None else bool(recompute_mode)
        if return_attn_probs:
            if requires_backward:
                raise AssertionError("FusedSDPA: return_attn_probs works only in inference.")
            recompute = False
        _check_sdpa_arguments(
            requires_backward,
            attn_mask,
            is_causal,
            softmax_mode,
            recompute,
            valid_seq_len,
            seq_padding_type,
            return_dropout_mask,
        )
        if valid_seq_len is not None:
            attn_mask, is_causal = _valid_length_mask(q, k, valid_seq_len, seq_padding_type), False
        dropout_mask = _dropout_mask(q, k, v, dropout_p)
        kept = dropout_mask if dropout_p > 0.0 else None  # dropout by hand, with a mask the backward reuses
        out, probs = _attend(q, k, v, attn_mask, dropout_p, is_causal, scale, kept)
        ctx.save_for_backward(q, k, v, attn_mask, kept)
        ctx.arguments = (dropout_p, is_causal, scale)
        ctx.autocast = AutocastState.of(q)
        outputs = [out]
        if return_attn_probs:
            if probs is None:
                probs = _probabilities(q, _grouped_kv(q, k, v)[0], attn_mask, is_causal, scale).to(q.dtype)
            outputs.append(probs)
        if return_dropout_mask and not recompute:
            outputs.append(dropout_mask)
        ctx.mark_non_differentiable(*outputs[1:])
        return out if len(outputs) == 1 else tuple(outputs)

    @staticmethod
    def backward(ctx: Any, grad_out: Tensor, *unused: Tensor) -> tuple[Tensor | None, ...]:
        q, k, v, attn_mask, dropout_mask = ctx.saved_tensors
        dropout_p, is_causal, scale = ctx.arguments

        def attend(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
            return _attend(q, k, v, attn_mask, dropout_p, is_causal, scale, dropout_mask)[0]

        dq, dk, dv = grads(attend, (q, k, v), ctx.needs_input_grad[:3], grad_out, ctx.autocast)
        return (dq, dk, dv, *([None] * 10))


def apply_rotary_pos_emb(p: Tensor, *args: Any) -> Tensor:
    """The bridge's rotary embedding: ``(p, cos, sin, position_ids=None, offset=0, mode=BLOCKWISE)``, or ChatGLM's
    ``(p, rope_cache)``.

    BLOCKWISE: ``p * cos + rotate_half(p) * sin`` (``rotate_half``: ``[x1, x2] -> [-x2, x1]``), after skipping
    ``offset`` leading values of cos and sin's last dimension, and taking the rows ``position_ids`` of a
    ``[1, 1, positions, dim]`` table if given. PAIRWISE: the same with each pair ``(x0, x1) -> (-x1, x0)``. If any
    of ``p``, ``cos``, ``sin`` is fp32, the result is fp32, else in ``p``'s dtype.
    """
    if len(args) == 1:
        return RotaryPosEmbeddingHelperV3.apply(p, args[0])
    if len(args) < 2 or len(args) > 5:
        raise TypeError(
            "apply_rotary_pos_emb takes (p, cos, sin, position_ids=None, offset=0, mode=BLOCKWISE) or (p, rope_cache)."
        )
    cos, sin, position_ids, offset, mode = (*args, None, 0, RotaryPosEmbeddingMode.BLOCKWISE)[:5]
    return rotary_embedding(p, cos, sin, position_ids, offset, mode)


class RotaryPosEmbeddingHelperV1(torch.autograd.Function):
    """``apply(p, cos, sin, offset)``: BLOCKWISE, as GPT-NeoX up to transformers 4.27.4 (LLaMA); gradient for ``p``."""

    @staticmethod
    def forward(ctx: Any, p: Tensor, cos: Tensor, sin: Tensor, offset: int) -> Tensor:
        ctx.save_for_backward(p, cos, sin)
        ctx.offset, ctx.autocast = offset, AutocastState.of(p)
        return rotary_embedding(p, cos, sin, None, offset, RotaryPosEmbeddingMode.BLOCKWISE)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, None, None, None]:
        p, cos, sin = ctx.saved_tensors

        def rope(p: Tensor) -> Tensor:
            return rotary_embedding(p, cos, sin, None, ctx.offset, RotaryPosEmbeddingMode.BLOCKWISE)

        return grads(rope, (p,), ctx.needs_input_grad[:1], grad, ctx.autocast)[0], None, None, None


class RotaryPosEmbeddingHelperV2(torch.autograd.Function):
    """``apply(p, cos, sin, position_ids)``: BLOCKWISE at the given positions, as transformers after 4.27.4."""

    @staticmethod
    def forward(ctx: Any, p: Tensor, cos: Tensor, sin: Tensor, position_ids: Tensor) -> Tensor:
        ctx.save_for_backward(p, cos, sin, position_ids)
        ctx.autocast = AutocastState.of(p)
        return rotary_embedding(p, cos, sin, position_ids, 0, RotaryPosEmbeddingMode.BLOCKWISE)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, None, None, None]:
        p, cos, sin, position_ids = ctx.saved_tensors

        def rope(p: Tensor) -> Tensor:
            return rotary_embedding(p, cos, sin, position_ids, 0, RotaryPosEmbeddingMode.BLOCKWISE)

        return grads(rope, (p,), ctx.needs_input_grad[:1], grad, ctx.autocast)[0], None, None, None


class RotaryPosEmbeddingHelperV3(torch.autograd.Function):
    """``apply(p, rope_cache)``: ChatGLM's PAIRWISE rotation of the first ``2 * rope_cache.shape[-2]`` features."""

    @staticmethod
    def forward(ctx: Any, p: Tensor, rope_cache: Tensor) -> Tensor:
        ctx.save_for_backward(p, rope_cache)
        ctx.autocast = AutocastState.of(p)
        return rotary_embedding_from_cache(p, rope_cache)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, None]:
        p, rope_cache = ctx.saved_tensors
        return grads(
            lambda p: rotary_embedding_from_cache(p, rope_cache), (p,), ctx.needs_input_grad[:1], grad, ctx.autocast
        )[0], None
