"""The rotary position embedding as the bridge computes it: its modes, rotations and tables.

:mod:`habana_frameworks.torch.hpex.kernels <gaudi_standin.bridge.habana_frameworks.torch.hpex.kernels>`'s
``apply_rotary_pos_emb`` and its autograd helpers, and the custom op ``hpu::rotary_pos_embedding``
(:mod:`gaudi_standin.ops.rope`), compute with these.
"""

from __future__ import annotations

from enum import Enum

import torch
from torch import Tensor

__all__ = [
    "RotaryPosEmbeddingMode",
    "at_positions",
    "common_dtype",
    "rotary_embedding",
    "rotary_embedding_from_cache",
    "rotate_half",
    "rotate_pairs",
]


class RotaryPosEmbeddingMode(Enum):
    """How the rotated halves pair up: ``BLOCKWISE`` (GPT-NeoX, LLaMA) or ``PAIRWISE`` (GPT-J, ChatGLM)."""

    BLOCKWISE = 0
    PAIRWISE = 1


def common_dtype(p: Tensor, cos: Tensor, sin: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """As the bridge: all in fp32 if any of the three is, else ``cos`` and ``sin`` in the input's dtype."""
    if torch.float32 in (p.dtype, cos.dtype, sin.dtype):
        return p.float(), cos.float(), sin.float()
    return p, cos.to(p.dtype), sin.to(p.dtype)


def at_positions(table: Tensor, position_ids: Tensor) -> Tensor:
    """The rows ``position_ids`` (``[batch, seq]``) of a ``[1, heads or 1, positions, dim]`` table, per batch entry."""
    if table.dim() != 4:
        raise ValueError(
            "apply_rotary_pos_emb: with position_ids, cos and sin are [1, heads or 1, max_positions, dim] tables,"
            f" not of shape {tuple(table.shape)}."
        )
    batch, seq = position_ids.shape
    table = table.expand(batch, -1, -1, -1)
    index = position_ids[:, None, :, None].expand(batch, table.shape[1], seq, table.shape[3])
    return torch.gather(table, 2, index)


def rotate_half(x: Tensor) -> Tensor:
    """``[x1, x2] -> [-x2, x1]`` over the two halves of the last dimension (BLOCKWISE)."""
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rotate_pairs(x: Tensor) -> Tensor:
    """``(x0, x1), (x2, x3), ... -> (-x1, x0), (-x3, x2), ...`` over the last dimension (PAIRWISE)."""
    return torch.stack((-x[..., 1::2], x[..., ::2]), dim=-1).flatten(-2)


def rotary_embedding(
    p: Tensor, cos: Tensor, sin: Tensor, position_ids: Tensor | None, offset: int, mode: RotaryPosEmbeddingMode
) -> Tensor:
    """``p * cos + rotate(p) * sin``, the computation of the bridge's ``rotary_pos_embedding`` kernel."""
    if not isinstance(mode, RotaryPosEmbeddingMode):
        raise TypeError(f"apply_rotary_pos_emb: mode is a RotaryPosEmbeddingMode, not {mode!r}.")
    p, cos, sin = common_dtype(p, cos, sin)
    if mode is RotaryPosEmbeddingMode.PAIRWISE:
        if position_ids is not None:
            raise NotImplementedError("apply_rotary_pos_emb: the bridge defines position_ids for BLOCKWISE only.")
        return p * cos + rotate_pairs(p) * sin
    if offset:  # the first ``offset`` values of cos and sin's last dimension are skipped
        cos, sin = cos[..., offset : offset + p.shape[-1]], sin[..., offset : offset + p.shape[-1]]
    if position_ids is not None:
        cos, sin = at_positions(cos, position_ids), at_positions(sin, position_ids)
    return p * cos + rotate_half(p) * sin


def _cache_parts(p: Tensor, rope_cache: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """ChatGLM's ``rope_cache`` (``[..., rot_dim/2, 2]``: cos, sin) as the rotated part of ``p`` (``[seq, batch,
    heads, dim]``), the part that passes, and cos and sin repeated over each pair, in ``p``'s dtype."""
    seq, heads = p.size(0), p.size(2)
    rot_dim = rope_cache.shape[-2] * 2
    rotated, passed = p[..., :rot_dim].reshape(seq, -1, heads, rot_dim), p[..., rot_dim:]
    cache = rope_cache[:seq].reshape(seq, -1, 1, rot_dim // 2, 2)
    cos = cache[..., 0].repeat_interleave(2, dim=-1).to(p.dtype)
    sin = cache[..., 1].repeat_interleave(2, dim=-1).to(p.dtype)
    return rotated, passed, cos, sin


def rotary_embedding_from_cache(p: Tensor, rope_cache: Tensor) -> Tensor:
    rotated, passed, cos, sin = _cache_parts(p, rope_cache)
    out = rotated * cos + rotate_pairs(rotated) * sin
    return out if passed.shape[-1] == 0 else torch.cat((out, passed), dim=-1)
