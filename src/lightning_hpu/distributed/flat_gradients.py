"""Fast DDP's gradient averaging: persistent flat buffers, one pre-scaled all-reduce per dtype, no per-step allocation.

What it does each optimizer step, for each dtype of the trainable parameters:

1. write every gradient, divided by the world size, into its slice of a flat buffer allocated once (a parameter
   without a gradient writes zeros, so every process sends the same layout); dividing before the sum, as DDP does,
   gives DDP's numbers bit for bit;
2. sum the buffer across processes with one all-reduce (``SUM``: HCCL has no ``AVG``; scaling first keeps
   half-precision sums from overflowing);
3. make each parameter's ``.grad`` its slice of the buffer (a view, so nothing is copied back). With a wire dtype
   other than the parameters' (``reduce_dtype=torch.bfloat16``) the result is copied back into the gradients,
   cast to their dtype.

A gradient that already is its slice (``zero_grad(set_to_none=False)`` keeps it, and autograd then accumulates into
it in place) is divided where it lies. Step 1 takes one pass per gradient (``torch.div(..., out=slice)``) when the
tensors are large, and two fused calls for all of them (``_foreach_copy_`` and one in-place division of the buffer)
when they are many and small: ``benchmarks/fast_ddp.py`` measured which is faster where.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import torch
import torch.distributed as dist
from lightning.fabric.utilities.distributed import _distributed_is_initialized
from torch.distributed import ReduceOp
from torch.nn import Parameter
from torch.optim import Optimizer

#: Wire dtypes HCCL sums natively, accepted as ``reduce_dtype``.
REDUCE_DTYPES = (torch.bfloat16, torch.float32)

#: Below this mean size (elements per gradient), packing uses two fused calls instead of one call per gradient.
_FUSED_PACK_BELOW_NUMEL = 2**16


def check_reduce_dtype(reduce_dtype: torch.dtype | None) -> None:
    """Refuse a wire dtype HCCL cannot sum, before any work starts."""
    if reduce_dtype is not None and reduce_dtype not in REDUCE_DTYPES:
        raise ValueError(
            f"reduce_dtype={reduce_dtype} cannot carry gradients over HCCL; use torch.bfloat16, torch.float32 or None"
            " (the gradients' own dtype)."
        )


class _Bucket:
    """The parameters of one dtype and the flat buffer their gradients travel in."""

    def __init__(self, parameters: list[Parameter], wire_dtype: torch.dtype) -> None:
        self.parameters = parameters
        first = parameters[0]
        self.flat = torch.empty(sum(p.numel() for p in parameters), dtype=wire_dtype, device=first.device)
        pieces = self.flat.split([p.numel() for p in parameters])
        self.slices = [piece.view(p.shape) for piece, p in zip(pieces, parameters, strict=True)]
        self.slices_are_gradients = wire_dtype == first.dtype
        self.fused_pack = self.flat.numel() < _FUSED_PACK_BELOW_NUMEL * len(parameters)

    def pack_divided_(self, divisor: int) -> None:
        """Write every gradient divided by ``divisor`` into the buffer (zeros for a parameter without one)."""
        grads = [p.grad for p in self.parameters]
        fresh = [grad for grad, piece in zip(grads, self.slices, strict=True) if grad is not None and grad is not piece]
        if self.fused_pack and len(fresh) == len(grads):
            torch._foreach_copy_(self.slices, fresh)
            self.flat.div_(divisor)
            return
        for grad, piece in zip(grads, self.slices, strict=True):
            if grad is None:
                piece.zero_()
            elif grad is piece:
                piece.div_(divisor)
            else:
                torch.div(grad, divisor, out=piece)

    def unpack_(self) -> None:
        """Hand the reduced buffer to the parameters: as their gradients, or copied (and cast) into them."""
        for parameter, piece in zip(self.parameters, self.slices, strict=True):
            grad = parameter.grad
            if self.slices_are_gradients:
                if grad is not piece:
                    parameter.grad = piece
            elif grad is None:
                parameter.grad = piece.to(parameter.dtype)
            else:
                grad.copy_(piece)


class FlatGradients:
    """The gradients of a fixed list of trainable parameters, averaged across processes in persistent buffers.

    Args:
        parameters: the parameters, in the same order on every process (each once).
        reduce_dtype: the dtype floating-point gradients travel in (``torch.bfloat16`` halves the bytes on the
            wire, as optimum-habana's fast DDP does; the result is cast back). ``None``: their own dtype.
    """

    def __init__(self, parameters: Sequence[Parameter], reduce_dtype: torch.dtype | None = None) -> None:
        check_reduce_dtype(reduce_dtype)
        self.parameters = [p for p in parameters if p.requires_grad]
        by_dtype: dict[torch.dtype, list[Parameter]] = {}
        for parameter in self.parameters:
            by_dtype.setdefault(parameter.dtype, []).append(parameter)
        self.buckets = [
            _Bucket(group, reduce_dtype if reduce_dtype is not None and dtype.is_floating_point else dtype)
            for dtype, group in by_dtype.items()
        ]

    def matches(self, parameters: Sequence[Parameter]) -> bool:
        """Whether ``parameters`` still has exactly these trainable parameters, in this order."""
        trainable = [p for p in parameters if p.requires_grad]
        if len(trainable) != len(self.parameters):
            return False
        return all(a is b for a, b in zip(trainable, self.parameters, strict=True))


def unique_parameters(optimizer: Optimizer) -> Iterator[Parameter]:
    """The optimizer's parameters in a fixed order (the same on every process), each once."""
    seen: set[int] = set()
    for group in optimizer.param_groups:
        for parameter in group["params"]:
            if id(parameter) not in seen:
                seen.add(id(parameter))
                yield parameter


class OptimizerGradients:
    """The persistent :class:`FlatGradients` of each optimizer, rebuilt only when its trainable set changes.

    Fast DDP keeps one per strategy (Trainer and Fabric alike), so buffers are allocated once per optimizer.
    """

    def __init__(self, reduce_dtype: torch.dtype | None = None) -> None:
        check_reduce_dtype(reduce_dtype)
        self.reduce_dtype = reduce_dtype
        self._by_optimizer: dict[int, FlatGradients] = {}

    def of(self, optimizer: Optimizer) -> FlatGradients:
        """The flat gradient buffers of ``optimizer``'s parameters."""
        parameters = list(unique_parameters(optimizer))
        gradients = self._by_optimizer.get(id(optimizer))
        if gradients is None or not gradients.matches(parameters):
            gradients = self._by_optimizer[id(optimizer)] = FlatGradients(parameters, self.reduce_dtype)
        return gradients

    def clear(self) -> None:
        """Release every buffer (at teardown)."""
        self._by_optimizer.clear()


@torch.no_grad()
def all_reduce_gradients_(gradients: FlatGradients, group: Any | None = None) -> int:
    """Average the gradients of ``gradients.parameters`` over ``group``; return the number of all-reduces run."""
    if not _distributed_is_initialized() or not gradients.buckets:
        return 0
    group = dist.group.WORLD if group is None else group
    world_size = dist.get_world_size(group)
    for bucket in gradients.buckets:
        bucket.pack_divided_(world_size)
        dist.all_reduce(bucket.flat, op=ReduceOp.SUM, group=group)
        bucket.unpack_()
    return len(gradients.buckets)
