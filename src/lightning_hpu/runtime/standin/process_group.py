"""An ``"hccl"`` process group for the CPU stand-in: gloo does the work, HCCL's rules apply.

On a Gaudi, ``torch.distributed`` runs over HCCL, which refuses some reduce ops (``AVG``,
``PREMUL_SUM`` and the bitwise ones). Code that works over gloo can therefore fail on the device.
:func:`register_hccl_standin_backend` registers a CPU backend named ``"hccl"`` whose process group
hands every collective to a real gloo backend, but raises the bridge's error for those reduce ops.
Code tested on the stand-in then fails in CI where it would fail on a Gaudi.

How it works in torch 2.13: Python cannot subclass ``c10d.Backend`` (it has no Python constructor),
but it can subclass ``c10d.ProcessGroup``, whose pybind trampoline sends the C++ virtual collectives
to Python overrides (torch's threaded test process group works this way). A creator function
registered with ``Backend.register_backend`` may return such a subclass, and ``init_process_group``
and ``new_group`` then use it as the group itself. :class:`HCCLStandInProcessGroup` registers a
``ProcessGroupGloo`` as its CPU backend, so each collective it does not override goes through
``ProcessGroup``'s C++ implementation to gloo, and it overrides the collectives that take a reduce
op to check the op first. The trampoline also routes C++ callers (DDP's reducer, functional
collectives) to those overrides. The plain ``(store, rank, size, timeout)`` creator signature is
used: it carries everything gloo needs, where ``extended_api=True`` would only add options we ignore.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import AllgatherOptions as _AllgatherOptions  # not re-exported in the stubs
from torch.distributed import ReduceOp

from lightning_hpu.runtime.base import HCCL_REDUCE_OPS

if TYPE_CHECKING:
    from torch._C._distributed_c10d import Store  # ``torch.distributed`` re-exports it only implicitly

__all__ = [
    "HCCL_BACKEND_NAME",
    "HCCL_REFUSED_MESSAGE",
    "HCCLStandInProcessGroup",
    "check_hccl_reduce_op",
    "register_hccl_standin_backend",
]

#: The name ``torch.distributed`` knows Gaudi's collective library by.
HCCL_BACKEND_NAME = "hccl"

#: The error the bridge's ``ProcessGroupHCCL`` raises for a reduce op HCCL does not implement.
HCCL_REFUSED_MESSAGE = "Unsupported ReduceOp for HCCL process group"

#: A ``ReduceOp`` object or a ``ReduceOp.RedOpType`` member such as ``ReduceOp.SUM`` (torch's stubs
#: do not declare ``RedOpType``, hence ``Any``).
_ReduceOpLike = Any

_Options = TypeVar(
    "_Options", dist.AllreduceOptions, dist.AllreduceCoalescedOptions, dist.ReduceOptions, dist.ReduceScatterOptions
)

_register_lock = threading.Lock()


class _GlooReductions(Protocol):
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


def check_hccl_reduce_op(op: _ReduceOpLike) -> None:
    """Raise ``RuntimeError(HCCL_REFUSED_MESSAGE)`` unless HCCL implements ``op``."""
    # A ``ReduceOp`` object is not found in a set of ``RedOpType`` members: compare its ``.op``.
    if getattr(op, "op", op) not in HCCL_REDUCE_OPS:
        raise RuntimeError(HCCL_REFUSED_MESSAGE)


def _checked_options(
    options: _Options, opts: _Options | _ReduceOpLike | None, op: _ReduceOpLike | None, timeout: timedelta | None
) -> _Options:
    """The options of a reduce collective, from either calling form, after HCCL's check of the op.

    ``ProcessGroup``'s bindings take either an options object or (in their convenience overloads) an
    op and a timeout; ``options`` is a fresh object of the right type, used in the second case.
    """
    if isinstance(opts, type(options)):
        options = opts
    else:
        chosen: _ReduceOpLike = opts if opts is not None else op
        if chosen is not None:
            options.reduceOp = chosen if isinstance(chosen, ReduceOp) else ReduceOp(chosen)
    if timeout is not None:
        options.timeout = timeout
    check_hccl_reduce_op(options.reduceOp)
    return options


def _as_list(tensors: torch.Tensor | Sequence[torch.Tensor]) -> list[torch.Tensor]:
    return [tensors] if isinstance(tensors, torch.Tensor) else list(tensors)


class HCCLStandInProcessGroup(dist.ProcessGroup):
    """A process group that follows HCCL's rules but runs over gloo on the CPU.

    The reduce collectives check the op and call the gloo backend; the other collectives call the gloo backend
    directly too (left to ``ProcessGroup``'s C++ implementation they deadlock now and then on torch 2.13).
    """

    def __init__(self, store: Store, rank: int, size: int, timeout: timedelta) -> None:
        # The (store, rank, size) constructor cannot build a Python subclass; the stubs only list that one.
        super().__init__(rank, size)  # type: ignore[call-arg]
        gloo = dist.ProcessGroupGloo(store, rank, size, timeout)
        self._set_default_backend(dist.ProcessGroup.BackendType.GLOO)
        self._register_backend(torch.device("cpu"), dist.ProcessGroup.BackendType.GLOO, gloo)
        self._gloo = cast(_GlooReductions, gloo)
        self._gloo_any: Any = gloo

    def getBackendName(self) -> str:
        return HCCL_BACKEND_NAME

    def __repr__(self) -> str:
        return f"{type(self).__name__}(rank={self.rank()}, size={self.size()})"

    # --- collectives with a reduce op: refused like HCCL does, else run by gloo ----------------------

    def allreduce(  # type: ignore[override]
        self,
        tensors: torch.Tensor | Sequence[torch.Tensor],
        opts: dist.AllreduceOptions | _ReduceOpLike | None = None,
        timeout: timedelta | None = None,
        *,
        op: _ReduceOpLike | None = None,
    ) -> dist.Work:
        options = _checked_options(dist.AllreduceOptions(), opts, op, timeout)
        return self._gloo.allreduce(_as_list(tensors), options)

    def allreduce_coalesced(
        self, tensors: Sequence[torch.Tensor], opts: dist.AllreduceCoalescedOptions | None = None
    ) -> dist.Work:
        options = _checked_options(dist.AllreduceCoalescedOptions(), opts, None, None)
        return self._gloo.allreduce_coalesced(list(tensors), options)

    def reduce(  # type: ignore[override]
        self,
        tensors: torch.Tensor | Sequence[torch.Tensor],
        opts: dist.ReduceOptions | int | None = None,
        op: _ReduceOpLike | None = None,
        timeout: timedelta | None = None,
        *,
        root: int | None = None,
    ) -> dist.Work:
        if isinstance(opts, dist.ReduceOptions):
            options = _checked_options(dist.ReduceOptions(), opts, None, timeout)
        else:  # the ``reduce(tensor, root, op, timeout)`` overload
            options = _checked_options(dist.ReduceOptions(), None, op, timeout)
            options.rootRank = opts if opts is not None else (root or 0)
        return self._gloo.reduce(_as_list(tensors), options)

    def reduce_scatter(  # type: ignore[override]
        self,
        output_tensors: torch.Tensor | Sequence[torch.Tensor],
        input_tensors: Sequence[torch.Tensor] | Sequence[Sequence[torch.Tensor]],
        opts: dist.ReduceScatterOptions | _ReduceOpLike | None = None,
        timeout: timedelta | None = None,
        *,
        op: _ReduceOpLike | None = None,
    ) -> dist.Work:
        options = _checked_options(dist.ReduceScatterOptions(), opts, op, timeout)
        if isinstance(output_tensors, torch.Tensor):  # the ``reduce_scatter(output, inputs, op)`` overload
            outputs = [output_tensors]
            inputs = [cast(list[torch.Tensor], list(input_tensors))]
        else:
            outputs = list(output_tensors)
            inputs = [list(cast(Sequence[torch.Tensor], group)) for group in input_tensors]
        return self._gloo.reduce_scatter(outputs, inputs, options)

    def reduce_scatter_single(
        self, outputTensor: torch.Tensor, inputTensor: torch.Tensor, opts: dist.ReduceScatterOptions | None = None
    ) -> dist.Work:
        options = _checked_options(dist.ReduceScatterOptions(), opts, None, None)
        return self._gloo._reduce_scatter_base(outputTensor, inputTensor, options)

    def _reduce_scatter_base(
        self, outputTensor: torch.Tensor, inputTensor: torch.Tensor, opts: dist.ReduceScatterOptions | None = None
    ) -> dist.Work:
        # The binding of this older name does not go through the overridable C++ method: override it too.
        return self.reduce_scatter_single(outputTensor, inputTensor, opts)

    def reduce_scatter_single_coalesced(
        self,
        outputTensors: list[torch.Tensor],
        inputTensors: list[torch.Tensor],
        opts: dist.ReduceScatterOptions | None = None,
    ) -> dist.Work:
        # ``reduce_scatter_tensor_coalesced``, the older name, reaches this through the C++ method.
        options = _checked_options(dist.ReduceScatterOptions(), opts, None, None)
        # Gloo has no coalesced reduce-scatter: run them in turn and return the last one's work.
        works = [
            self._gloo._reduce_scatter_base(output, input, options)
            for output, input in zip(outputTensors, inputTensors, strict=True)
        ]
        for work in works[:-1]:
            work.wait()
        return works[-1]

    # --- collectives without a reduce op: run by gloo directly ---------------------------------------
    # Left to ``ProcessGroup``'s C++ implementation, broadcast and allgather deadlock now and then on
    # torch 2.13 (seen within a few hundred calls between two processes); calling gloo avoids it.

    def broadcast(self, tensors: Any, opts: Any = None) -> dist.Work:  # type: ignore[override]
        if isinstance(tensors, torch.Tensor):  # the ``broadcast(tensor, root)`` overload
            options = dist.BroadcastOptions()
            options.rootRank = int(opts or 0)
            return self._gloo_any.broadcast([tensors], options)
        return self._gloo_any.broadcast(list(tensors), opts if opts is not None else dist.BroadcastOptions())

    def allgather(self, output_tensors: Any, input_tensors: Any, opts: Any = None) -> dist.Work:
        if isinstance(input_tensors, torch.Tensor):  # the ``allgather(outputs, input)`` overload
            output_tensors, input_tensors = [list(output_tensors)], [input_tensors]
        options = opts if opts is not None else _AllgatherOptions()
        return self._gloo_any.allgather(output_tensors, input_tensors, options)

    def _allgather_base(self, output: Any, input: Any, opts: Any = None) -> dist.Work:
        return self._gloo_any._allgather_base(output, input, opts if opts is not None else _AllgatherOptions())

    def barrier(self, opts: Any = None) -> dist.Work:
        return self._gloo_any.barrier(opts if opts is not None else dist.BarrierOptions())


class _ShardingCollectives:
    """What FSDP (1 and 2) and DTensor call beyond DDP's collectives, run by gloo directly (mixed into the group).

    ``reduce_scatter_tensor`` and its coalesced form already go through the reduce-op check above;
    ``all_gather_into_tensor`` goes to ``_allgather_base``. Gloo has no coalesced all-gather into one tensor: the
    coalesced form (``_coalescing_manager`` around several ``all_gather_into_tensor`` calls) runs them in turn.
    """

    _gloo_any: Any

    def all_gather_single_coalesced(
        self, outputTensors: list[torch.Tensor], inputTensors: list[torch.Tensor], opts: Any = None
    ) -> dist.Work:
        # ``allgather_into_tensor_coalesced``, the older name, reaches this through the C++ method.
        options = opts if opts is not None else _AllgatherOptions()
        works = [
            self._gloo_any._allgather_base(output, input, options)
            for output, input in zip(outputTensors, inputTensors, strict=True)
        ]
        for pending in works[:-1]:
            pending.wait()
        last: dist.Work = works[-1]
        return last

    def allgather_into_tensor_coalesced(
        self, outputTensors: list[torch.Tensor], inputTensors: list[torch.Tensor], opts: Any = None
    ) -> dist.Work:
        return self.all_gather_single_coalesced(outputTensors, inputTensors, opts)


for _name in ("all_gather_single_coalesced", "allgather_into_tensor_coalesced"):
    setattr(HCCLStandInProcessGroup, _name, getattr(_ShardingCollectives, _name))


def _run_on_gloo(name: str) -> Callable[..., dist.Work]:
    """A method that hands the call, as ``torch.distributed`` makes it, straight to the gloo backend."""

    def delegate(self: HCCLStandInProcessGroup, *args: Any, **kwargs: Any) -> dist.Work:
        work: dist.Work = getattr(self._gloo_any, name)(*args, **kwargs)
        return work

    delegate.__name__ = delegate.__qualname__ = name
    return delegate


# The remaining collectives without a reduce op take the same direct path (the C++ route deadlocks the same way).
_DIRECT_TO_GLOO = ("alltoall", "alltoall_base", "gather", "scatter", "send", "recv", "recv_anysource")
for _name in (*_DIRECT_TO_GLOO, "allgather_coalesced"):
    setattr(HCCLStandInProcessGroup, _name, _run_on_gloo(_name))


def _create_hccl_standin(store: Store, group_rank: int, group_size: int, timeout: timedelta) -> HCCLStandInProcessGroup:
    """What ``init_process_group``/``new_group`` call to build an ``"hccl"`` group on the stand-in."""
    return HCCLStandInProcessGroup(store, group_rank, group_size, timeout)


def register_hccl_standin_backend() -> None:
    """Register the ``"hccl"`` backend for the CPU, unless a backend of that name is already there.

    Afterwards ``dist.init_process_group(backend="hccl")`` gives a gloo-run group that refuses
    ``AVG``, ``PREMUL_SUM``, ``BAND``, ``BOR`` and ``BXOR`` like HCCL. Calling it again, or after the
    bridge registered the real HCCL, does nothing. ``"gloo"`` stays the CPU's default backend.
    """
    with _register_lock:
        backend = dist.Backend
        if HCCL_BACKEND_NAME in backend.backend_list or HCCL_BACKEND_NAME.upper() in backend._plugins:
            return
        backend.register_backend(HCCL_BACKEND_NAME, _create_hccl_standin, devices=["cpu"])
