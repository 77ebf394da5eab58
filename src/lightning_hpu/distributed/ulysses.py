"""Context-parallel attention by all-to-all (the DeepSpeed-Ulysses scheme): heads scattered, sequence gathered.

Each rank of the context-parallel group holds ``S / P`` consecutive tokens of every sequence. Before attention one
all-to-all turns ``(batch, heads, S / P, head_dim)`` into ``(batch, heads / P, S, head_dim)``: every rank then holds
the whole sequence for ``1 / P`` of the heads, so any local attention (causal or not, SDPA or a fused kernel) runs
unchanged on it; a second all-to-all turns the output back into ``(batch, heads, S / P, head_dim)``. The backward
of an all-to-all with equal splits is the same all-to-all of the gradients, so autograd needs nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor, nn

from lightning_hpu.runtime import HPUConfigurationError

#: A local attention: ``(query, key, value, **kwargs) -> output``, all ``(batch, heads, sequence, head_dim)``.
LocalAttention = Callable[..., Tensor]


class _AllToAll(torch.autograd.Function):
    """All-to-all over dimension 0, split in ``group.size()`` equal chunks: chunk ``j`` goes to rank ``j``."""

    @staticmethod
    def forward(ctx: Any, chunks: Tensor, group: dist.ProcessGroup) -> Tensor:
        ctx.group = group
        return _exchange(chunks, group)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None]:
        # Chunk j came from rank j, so its gradient goes back to rank j: the same exchange.
        return _exchange(grad, ctx.group), None


def _exchange(chunks: Tensor, group: dist.ProcessGroup) -> Tensor:
    chunks = chunks.contiguous()
    received = torch.empty_like(chunks)
    dist.all_to_all_single(received, chunks, group=group)
    return received


def sequence_to_heads(x: Tensor, group: dist.ProcessGroup) -> Tensor:
    """``(B, H, S/P, D)`` on each rank -> ``(B, H/P, S, D)``: scatter the heads, gather the sequence in rank order."""
    size = dist.get_world_size(group)
    batch, heads, local_length, head_dim = x.shape
    chunks = x.reshape(batch, size, heads // size, local_length, head_dim).transpose(0, 1)
    received = _AllToAll.apply(chunks, group)  # (P, B, H/P, S/P, D): chunk j holds rank j's tokens
    return received.permute(1, 2, 0, 3, 4).reshape(batch, heads // size, size * local_length, head_dim)


def heads_to_sequence(x: Tensor, group: dist.ProcessGroup) -> Tensor:
    """``(B, H/P, S, D)`` -> ``(B, H, S/P, D)``: the inverse of :func:`sequence_to_heads`."""
    size = dist.get_world_size(group)
    batch, local_heads, length, head_dim = x.shape
    chunks = x.reshape(batch, local_heads, size, length // size, head_dim).permute(2, 0, 1, 3, 4)
    received = _AllToAll.apply(chunks, group)  # (P, B, H/P, S/P, D): chunk j holds rank j's heads
    return received.transpose(0, 1).reshape(batch, size * local_heads, length // size, head_dim)


def check_heads(num_heads: int, context_parallel_size: int, what: str = "attention heads") -> None:
    """Refuse a head count the all-to-all cannot split evenly over the context-parallel ranks."""
    if num_heads % context_parallel_size:
        raise HPUConfigurationError(
            f"context_parallel_size={context_parallel_size} must divide the number of {what} ({num_heads}) for the"
            f" all-to-all (Ulysses) attention; choose a context_parallel_size that divides {num_heads}."
        )


class ContextParallelAttention(nn.Module):
    """Attention over a sequence split across the context-parallel ranks (``context_parallel_size`` of the strategy).

    Put it in the model where the attention is computed, called with ``query, key, value`` of shape
    ``(batch, heads, local_sequence, head_dim)`` as :func:`torch.nn.functional.scaled_dot_product_attention`; it
    runs ``attention`` (SDPA by default; keyword arguments such as ``is_causal=True`` pass through) on the whole
    sequence for ``heads / P`` of the heads and returns this rank's tokens for all heads. ``HPUModelParallelStrategy``
    connects it to the mesh's ``"context_parallel"`` group; unconnected (or with one rank) it is the local attention.
    An ``attn_mask`` must be the full sequence's ``(S, S)`` mask, as the attention sees the whole sequence.

    Args:
        attention: the local attention, ``(query, key, value, **kwargs) -> output``.
        num_heads: the query heads, if known: the strategy then refuses a ``context_parallel_size`` that does not
            divide it before training starts (otherwise the first forward does).
    """

    def __init__(self, attention: LocalAttention | None = None, num_heads: int | None = None) -> None:
        super().__init__()
        self.attention: LocalAttention = attention or nn.functional.scaled_dot_product_attention
        self.num_heads = num_heads
        self.group: dist.ProcessGroup | None = None

    def connect(self, group: dist.ProcessGroup | None) -> None:
        """Run over ``group`` (the context-parallel ranks, in sequence order); ``None`` runs locally."""
        size = 1 if group is None else dist.get_world_size(group)
        if self.num_heads is not None:
            check_heads(self.num_heads, size)
        self.group = group if size > 1 else None

    def forward(self, query: Tensor, key: Tensor, value: Tensor, **kwargs: Any) -> Tensor:
        group = self.group
        if group is None:
            return self.attention(query, key, value, **kwargs)
        size = dist.get_world_size(group)
        check_heads(query.shape[1], size)
        check_heads(key.shape[1], size, "key/value heads")
        query, key, value = (sequence_to_heads(x, group) for x in (query, key, value))
        return heads_to_sequence(self.attention(query, key, value, **kwargs), group)

    def extra_repr(self) -> str:
        name = getattr(self.attention, "__name__", type(self.attention).__name__)
        return f"attention={name}, num_heads={self.num_heads}"
