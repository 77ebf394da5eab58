"""An ``"hccl"`` process group for the CPU stand-in: gloo does the work, HCCL's rules apply.

On a Gaudi, ``torch.distributed`` runs over the bridge's HCCL process group, which differs from gloo and NCCL:

* it reduces with ``SUM``, ``MIN`` and ``MAX`` only: ``AVG``, ``PREMUL_SUM`` and the bitwise ops are refused, and
  ``PRODUCT`` maps to an op the HCCL library does not implement;
* ``allreduce`` and ``reduce`` compute every tensor that is not bf16 or fp32 in fp32 and cast the result back
  (int32 values above 2**24 round as fp32 rounds them); the tensor reduce-scatters do the same except for int32
  and int64;
* complex tensors are refused (broadcast aside, which moves bytes), and ``recv`` from any source throws;
* a collective during an HPU graph capture asserts.

:func:`register_hccl_standin_backend` registers a CPU backend named ``"hccl"`` whose process group hands every
collective to a real gloo backend after applying those rules, so code tested on the stand-in fails (or rounds)
where it would on a Gaudi. Every refusal starts with the bridge's own message and says what to do instead.

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

import atexit
import threading
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import AllgatherOptions as _AllgatherOptions  # not re-exported in the stubs
from torch.distributed import ReduceOp
from torch.utils._pytree import tree_leaves, tree_map_only

#: The reduce ops HCCL runs: the bridge refuses AVG, PREMUL_SUM and the bitwise ops, and maps PRODUCT to
#: ``hcclProd``, which the HCCL library does not implement.
HCCL_REDUCE_OPS = frozenset({dist.ReduceOp.SUM, dist.ReduceOp.MIN, dist.ReduceOp.MAX})
from gaudi_standin import device as hpu_device
from gaudi_standin.graphs import capture_active

if TYPE_CHECKING:
    from torch._C._distributed_c10d import Store  # ``torch.distributed`` re-exports it only implicitly

__all__ = [
    "CAPTURE_REFUSED_MESSAGE",
    "DTYPE_REFUSED_MESSAGE",
    "HCCL_BACKEND_NAME",
    "HCCL_REFUSED_MESSAGE",
    "RECV_ANYSOURCE_MESSAGE",
    "HCCLStandInProcessGroup",
    "check_hccl_reduce_op",
    "register_hccl_standin_backend",
]

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
_INSTEAD = {
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
_REDUCED_AS_IS = frozenset({torch.float32, torch.bfloat16})

#: dtypes the tensor reduce-scatters reduce as they are.
_REDUCE_SCATTERED_AS_IS = frozenset({torch.float32, torch.bfloat16, torch.int32, torch.int64})

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
    """Raise a ``RuntimeError`` that starts with :data:`HCCL_REFUSED_MESSAGE` unless HCCL implements ``op``."""
    # A ``ReduceOp`` object is not found in a set of ``RedOpType`` members: compare its ``.op``.
    red_op = getattr(op, "op", op)
    if red_op not in HCCL_REDUCE_OPS:
        name = getattr(red_op, "name", str(red_op))
        instead = _INSTEAD.get(name, "use ReduceOp.SUM, MIN or MAX")
        raise RuntimeError(f"{HCCL_REFUSED_MESSAGE}: ReduceOp.{name} cannot run on HCCL; {instead}.")


def _check_collective(name: str, arguments: Any, complex_allowed: bool = False) -> None:
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


def _in_fp32(tensors: list[torch.Tensor], as_is: frozenset[torch.dtype]) -> list[torch.Tensor]:
    """The tensors HCCL reduces: those of an ``as_is`` dtype themselves, the others as fp32 copies."""
    return [tensor if tensor.dtype in as_is else tensor.float() for tensor in tensors]


def _cast_back(work: dist.Work, tensors: list[torch.Tensor], reduced: list[torch.Tensor]) -> dist.Work:
    """Once ``work`` is done, write each fp32 copy back into its tensor in the tensor's dtype (as the bridge does)."""
    pairs = [(tensor, copy) for tensor, copy in zip(tensors, reduced, strict=True) if copy is not tensor]
    if pairs:
        work.wait()
        for tensor, copy in pairs:
            tensor.copy_(copy)
    return work


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


class _GlooOnHostViews:
    """The gloo backend, handed host views of the stand-in's ``hpu`` tensors (gloo takes CPU tensors only).

    The views share the tensors' bytes, so gloo writes its results straight into the ``hpu`` tensors.
    """

    def __init__(self, gloo: Any) -> None:
        self._gloo = gloo

    def __getattr__(self, name: str) -> Callable[..., dist.Work]:
        method = getattr(self._gloo, name)

        def on_host(*args: Any) -> dist.Work:
            work: dist.Work = method(*tree_map_only(torch.Tensor, _host, args))
            return work

        return on_host


def _host(tensor: torch.Tensor) -> torch.Tensor:
    return hpu_device.host_view(tensor) if tensor.device.type == "hpu" else tensor


def _as_list(tensors: torch.Tensor | Sequence[torch.Tensor]) -> list[torch.Tensor]:
    return [tensors] if isinstance(tensors, torch.Tensor) else list(tensors)


class HCCLStandInProcessGroup(dist.ProcessGroup):
    """A process group that follows HCCL's rules but runs over gloo on the CPU.

    The reduce collectives check the op and the dtypes, reduce what HCCL reduces in fp32 in fp32, and call the gloo
    backend; the other collectives call the gloo backend directly too (left to ``ProcessGroup``'s C++
    implementation they deadlock now and then on torch 2.13). None runs during an HPU graph capture.
    """

    def __init__(self, store: Store, rank: int, size: int, timeout: timedelta) -> None:
        # The (store, rank, size) constructor cannot build a Python subclass; the stubs only list that one.
        super().__init__(rank, size)  # type: ignore[call-arg]
        gloo = dist.ProcessGroupGloo(store, rank, size, timeout)
        self._set_default_backend(dist.ProcessGroup.BackendType.GLOO)
        for device in ("cpu", "hpu"):
            self._register_backend(torch.device(device), dist.ProcessGroup.BackendType.GLOO, gloo)
        on_host = _GlooOnHostViews(gloo)
        self._gloo = cast(_GlooReductions, on_host)
        self._gloo_any: Any = on_host

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
        given = _as_list(tensors)
        _check_collective("all_reduce", given)
        options = _checked_options(dist.AllreduceOptions(), opts, op, timeout)
        reduced = _in_fp32(given, _REDUCED_AS_IS)
        return _cast_back(self._gloo.allreduce(reduced, options), given, reduced)

    def allreduce_coalesced(
        self, tensors: Sequence[torch.Tensor], opts: dist.AllreduceCoalescedOptions | None = None
    ) -> dist.Work:
        given = list(tensors)
        _check_collective("all_reduce_coalesced", given)
        options = _checked_options(dist.AllreduceCoalescedOptions(), opts, None, None)
        reduced = _in_fp32(given, _REDUCED_AS_IS)
        return _cast_back(self._gloo.allreduce_coalesced(reduced, options), given, reduced)

    def reduce(  # type: ignore[override]
        self,
        tensors: torch.Tensor | Sequence[torch.Tensor],
        opts: dist.ReduceOptions | int | None = None,
        op: _ReduceOpLike | None = None,
        timeout: timedelta | None = None,
        *,
        root: int | None = None,
    ) -> dist.Work:
        given = _as_list(tensors)
        _check_collective("reduce", given)
        if isinstance(opts, dist.ReduceOptions):
            options = _checked_options(dist.ReduceOptions(), opts, None, timeout)
        else:  # the ``reduce(tensor, root, op, timeout)`` overload
            options = _checked_options(dist.ReduceOptions(), None, op, timeout)
            options.rootRank = opts if opts is not None else (root or 0)
        reduced = _in_fp32(given, _REDUCED_AS_IS)
        return _cast_back(self._gloo.reduce(reduced, options), given, reduced)

    def reduce_scatter(  # type: ignore[override]
        self,
        output_tensors: torch.Tensor | Sequence[torch.Tensor],
        input_tensors: Sequence[torch.Tensor] | Sequence[Sequence[torch.Tensor]],
        opts: dist.ReduceScatterOptions | _ReduceOpLike | None = None,
        timeout: timedelta | None = None,
        *,
        op: _ReduceOpLike | None = None,
    ) -> dist.Work:
        _check_collective("reduce_scatter", (output_tensors, input_tensors))
        options = _checked_options(dist.ReduceScatterOptions(), opts, op, timeout)
        if isinstance(output_tensors, torch.Tensor):  # the ``reduce_scatter(output, inputs, op)`` overload
            outputs = [output_tensors]
            inputs = [cast(list[torch.Tensor], list(input_tensors))]
        else:
            outputs = list(output_tensors)
            inputs = [list(cast(Sequence[torch.Tensor], group)) for group in input_tensors]
        # The bridge's list form reduces every dtype as it is.
        return self._gloo.reduce_scatter(outputs, inputs, options)

    def reduce_scatter_single(
        self, outputTensor: torch.Tensor, inputTensor: torch.Tensor, opts: dist.ReduceScatterOptions | None = None
    ) -> dist.Work:
        _check_collective("reduce_scatter_tensor", (outputTensor, inputTensor))
        options = _checked_options(dist.ReduceScatterOptions(), opts, None, None)
        return self._reduce_scatter_tensor(outputTensor, inputTensor, options)

    def _reduce_scatter_tensor(
        self, output: torch.Tensor, input: torch.Tensor, options: dist.ReduceScatterOptions
    ) -> dist.Work:
        """One tensor reduce-scatter, with the dtypes the bridge does not reduce as they are reduced in fp32."""
        if output.dtype in _REDUCE_SCATTERED_AS_IS:
            return self._gloo._reduce_scatter_base(output, input, options)
        reduced_output = output.float()
        work = self._gloo._reduce_scatter_base(reduced_output, input.float(), options)
        return _cast_back(work, [output], [reduced_output])

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
        _check_collective("reduce_scatter_tensor_coalesced", (outputTensors, inputTensors))
        options = _checked_options(dist.ReduceScatterOptions(), opts, None, None)
        # Gloo has no coalesced reduce-scatter: run them in turn and return the last one's work.
        works = [
            self._reduce_scatter_tensor(output, input, options)
            for output, input in zip(outputTensors, inputTensors, strict=True)
        ]
        for work in works[:-1]:
            work.wait()
        return works[-1]

    def reduce_scatter_tensor_coalesced(
        self,
        outputTensors: list[torch.Tensor],
        inputTensors: list[torch.Tensor],
        opts: dist.ReduceScatterOptions | None = None,
    ) -> dist.Work:
        # The name torch 2.9 uses (its ``_coalescing_manager`` and its C++ trampoline call this one; torch 2.13 calls
        # ``reduce_scatter_single_coalesced``): without it, torch 2.9 reduce-scattered coalesced tensors unchecked.
        return self.reduce_scatter_single_coalesced(outputTensors, inputTensors, opts)

    # --- collectives without a reduce op: run by gloo directly ---------------------------------------
    # Left to ``ProcessGroup``'s C++ implementation, broadcast and allgather deadlock now and then on
    # torch 2.13 (seen within a few hundred calls between two processes); calling gloo avoids it.

    def broadcast(self, tensors: Any, opts: Any = None) -> dist.Work:  # type: ignore[override]
        # The bridge broadcasts bytes, whatever the dtype: complex tensors too.
        _check_collective("broadcast", tensors, complex_allowed=True)
        if isinstance(tensors, torch.Tensor):  # the ``broadcast(tensor, root)`` overload
            options = dist.BroadcastOptions()
            options.rootRank = int(opts or 0)
            return self._gloo_any.broadcast([tensors], options)
        return self._gloo_any.broadcast(list(tensors), opts if opts is not None else dist.BroadcastOptions())

    def allgather(self, output_tensors: Any, input_tensors: Any, opts: Any = None) -> dist.Work:
        _check_collective("all_gather", (output_tensors, input_tensors))
        if isinstance(input_tensors, torch.Tensor):  # the ``allgather(outputs, input)`` overload
            output_tensors, input_tensors = [list(output_tensors)], [input_tensors]
        options = opts if opts is not None else _AllgatherOptions()
        return self._gloo_any.allgather(output_tensors, input_tensors, options)

    def _allgather_base(self, output: Any, input: Any, opts: Any = None) -> dist.Work:
        _check_collective("all_gather_into_tensor", (output, input))
        return self._gloo_any._allgather_base(output, input, opts if opts is not None else _AllgatherOptions())

    def barrier(self, opts: Any = None) -> dist.Work:
        _check_collective("barrier", ())
        return self._gloo_any.barrier(opts if opts is not None else dist.BarrierOptions())

    def recv_anysource(self, tensors: Any, tag: int = 0) -> dist.Work:
        raise RuntimeError(
            f"{RECV_ANYSOURCE_MESSAGE} from any source: name the sending rank, e.g. dist.recv(tensor, src=0)."
        )


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
    """A method that checks the call as the bridge does, then hands it straight to the gloo backend."""
    # The list form of alltoall moves bytes like broadcast; the others look the dtype up and refuse complex.
    complex_allowed = name == "alltoall"

    def delegate(self: HCCLStandInProcessGroup, *args: Any, **kwargs: Any) -> dist.Work:
        _check_collective(name, (args, kwargs), complex_allowed=complex_allowed)
        work: dist.Work = getattr(self._gloo_any, name)(*args, **kwargs)
        return work

    delegate.__name__ = delegate.__qualname__ = name
    return delegate


# The remaining collectives without a reduce op take the same direct path (the C++ route deadlocks the same way).
_DIRECT_TO_GLOO = ("alltoall", "alltoall_base", "gather", "scatter", "send", "recv")
for _name in (*_DIRECT_TO_GLOO, "allgather_coalesced"):
    setattr(HCCLStandInProcessGroup, _name, _run_on_gloo(_name))


def _create_hccl_standin(store: Store, group_rank: int, group_size: int, timeout: timedelta) -> HCCLStandInProcessGroup:
    """What ``init_process_group``/``new_group`` call to build an ``"hccl"`` group on the stand-in."""
    return HCCLStandInProcessGroup(store, group_rank, group_size, timeout)


def register_hccl_standin_backend() -> None:
    """Register the ``"hccl"`` backend for the stand-in's ``hpu`` (and the CPU), unless one of that name is there.

    Afterwards ``dist.init_process_group(backend="hccl")`` gives a gloo-run group that follows HCCL's rules (see
    the module docstring). Calling it again, or after the bridge registered the real HCCL, does nothing.
    ``"gloo"`` stays the CPU's default backend.
    """
    with _register_lock:
        backend = dist.Backend
        if HCCL_BACKEND_NAME in backend.backend_list or HCCL_BACKEND_NAME.upper() in backend._plugins:
            return
        backend.register_backend(HCCL_BACKEND_NAME, _create_hccl_standin, devices=["cpu", "hpu"])
        atexit.register(_destroy_process_groups_at_exit)


def _destroy_process_groups_at_exit() -> None:
    """Shut the process groups down before the interpreter does.

    Lightning leaves the default group alive when a run ends. Left to the interpreter's final teardown, gloo's
    worker threads can be destroyed while still joinable, and the process then aborts at exit ("terminate called
    without an active exception") after a run that succeeded. Destroying the groups here, while Python still runs,
    joins them cleanly.
    """
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
