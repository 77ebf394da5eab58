"""HCCL's rules as the bridge's process group applies them: the reduce ops, dtypes and options it accepts, the
reductions it computes in fp32, and its error messages. :mod:`gaudi_standin.distributed.process_group` enforces them."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Protocol, TypeVar

import torch
import torch.distributed as dist
from torch.distributed import ReduceOp
from torch.utils._pytree import tree_leaves

from gaudi_standin.graphs.standin_graph import capture_active

#: The reduce ops HCCL runs: the bridge refuses AVG, PREMUL_SUM and the bitwise ops, and maps PRODUCT to
#: ``hcclProd``, which the HCCL library does not implement.
HCCL_REDUCE_OPS = frozenset({dist.ReduceOp.SUM, dist.ReduceOp.MIN, dist.ReduceOp.MAX})

#: The name ``torch.distributed`` knows Gaudi's collective library by.
HCCL_BACKEND_NAME = "hccl"

#: The error the bridge's ``ProcessGroupHCCL`` raises for a reduce op HCCL does not implement.
HCCL_REFUSED_MESSAGE = "Unsupported ReduceOp for HCCL process group"

#: The bridge's assertion for a collective inside an HPU graph capture.
CAPTURE_REFUSED_MESSAGE = "collective nonSFG is not supported during hpu graph capturing"

#: The bridge's error for a dtype HCCL cannot carry (complex).
DTYPE_REFUSED_MESSAGE = "Input tensor data type is not supported for HCCL process group"

#: The bridge's error for ``recv`` without a source rank.
RECV_ANYSOURCE_MESSAGE = "ProcessGroupHcclBase does not support recv"

#: What to do instead of each reduce op HCCL refuses.
INSTEAD = {
    "AVG": "reduce with ReduceOp.SUM and divide by the world size"
    " (strategy.reduce(tensor, reduce_op='mean') does both)",
    "PRODUCT": "HCCL does not implement a product: reduce on the host, or all-reduce the logarithms with"
    " ReduceOp.SUM and exponentiate",
    "PREMUL_SUM": "multiply the tensor by the factor, then reduce with ReduceOp.SUM",
    "BAND": "reduce 0/1 values with ReduceOp.MIN, which is an AND",
    "BOR": "reduce 0/1 values with ReduceOp.MAX, which is an OR",
    "BXOR": "reduce with ReduceOp.SUM and take the result modulo 2",
}

#: dtypes ``allreduce`` and ``reduce`` reduce as they are; everything else is reduced in fp32 and cast back.
REDUCED_AS_IS = frozenset({torch.float32, torch.bfloat16})

#: dtypes the tensor reduce-scatters reduce as they are.
REDUCE_SCATTERED_AS_IS = frozenset({torch.float32, torch.bfloat16, torch.int32, torch.int64})

#: A ``ReduceOp`` object or a ``ReduceOp.RedOpType`` member such as ``ReduceOp.SUM`` (torch's stubs
#: do not declare ``RedOpType``, hence ``Any``).
ReduceOpLike = Any

Options = TypeVar(
    "Options", dist.AllreduceOptions, dist.AllreduceCoalescedOptions, dist.ReduceOptions, dist.ReduceScatterOptions
)


class GlooReductions(Protocol):
    """The ``ProcessGroupGloo`` methods used here (torch's stubs leave them off ``c10d.Backend``)."""

    def allreduce(self, tensors: list[torch.Tensor], opts: dist.AllreduceOptions, /) -> dist.Work: ...

    def allreduce_coalesced(
        self, tensors: list[torch.Tensor], opts: dist.AllreduceCoalescedOptions, /
    ) -> dist.Work: ...

    def reduce(self, tensors: list[torch.Tensor], opts: dist.ReduceOptions, /) -> dist.Work: ...

    def reduce_scatter(
        self, outputs: list[torch.Tensor], inputs: list[list[torch.Tensor]], opts: dist.ReduceScatterOptions, /
    ) -> dist.Work: ...

    def _reduce_scatter_base(
        self, output: torch.Tensor, input: torch.Tensor, opts: dist.ReduceScatterOptions, /
    ) -> dist.Work: ...


def check_hccl_reduce_op(op: ReduceOpLike) -> None:
    """Raise a ``RuntimeError`` that starts with :data:`HCCL_REFUSED_MESSAGE` unless HCCL implements ``op``."""
    # A ``ReduceOp`` object is not found in a set of ``RedOpType`` members: compare its ``.op``.
    red_op = getattr(op, "op", op)
    if red_op not in HCCL_REDUCE_OPS:
        name = getattr(red_op, "name", str(red_op))
        instead = INSTEAD.get(name, "use ReduceOp.SUM, MIN or MAX")
        raise RuntimeError(f"{HCCL_REFUSED_MESSAGE}: ReduceOp.{name} cannot run on HCCL; {instead}.")


def check_collective(name: str, arguments: Any, complex_allowed: bool = False) -> None:
    """Refuse, as the bridge does, a collective during an HPU graph capture and (mostly) complex tensors."""
    if capture_active():
        raise RuntimeError(
            f"{CAPTURE_REFUSED_MESSAGE}: {name} was called while an HPU graph was being captured; run collectives"
            " outside the captured region (capture the computation, then reduce its outputs after each replay)."
        )
    if complex_allowed:
        return
    for leaf in tree_leaves(arguments):
        if isinstance(leaf, torch.Tensor) and leaf.is_complex():
            raise RuntimeError(
                f"{DTYPE_REFUSED_MESSAGE}: {leaf.dtype} in {name}; send torch.view_as_real(tensor) instead and"
                " rebuild it with torch.view_as_complex."
            )


def in_fp32(tensors: list[torch.Tensor], as_is: frozenset[torch.dtype]) -> list[torch.Tensor]:
    """The tensors HCCL reduces: those of an ``as_is`` dtype themselves, the others as fp32 copies."""
    return [tensor if tensor.dtype in as_is else tensor.float() for tensor in tensors]


def cast_back(work: dist.Work, tensors: list[torch.Tensor], reduced: list[torch.Tensor]) -> dist.Work:
    """Once ``work`` is done, write each fp32 copy back into its tensor in the tensor's dtype (as the bridge does)."""
    pairs = [(tensor, copy) for tensor, copy in zip(tensors, reduced, strict=True) if copy is not tensor]
    if pairs:
        work.wait()
        for tensor, copy in pairs:
            tensor.copy_(copy)
    return work


def checked_options(
    options: Options, opts: Options | ReduceOpLike | None, op: ReduceOpLike | None, timeout: timedelta | None
) -> Options:
    """The options of a reduce collective, from either calling form, after HCCL's check of the op.

    ``ProcessGroup``'s bindings take either an options object or (in their convenience overloads) an
    op and a timeout; ``options`` is a fresh object of the right type, used in the second case.
    """
    if isinstance(opts, type(options)):
        options = opts
    else:
        chosen: ReduceOpLike = opts if opts is not None else op
        if chosen is not None:
            options.reduceOp = chosen if isinstance(chosen, ReduceOp) else ReduceOp(chosen)
    if timeout is not None:
        options.timeout = timeout
    check_hccl_reduce_op(options.reduceOp)
    return options
