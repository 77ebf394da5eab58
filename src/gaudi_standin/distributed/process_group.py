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
from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, cast

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import AllgatherOptions as _AllgatherOptions  # not re-exported in the stubs

from gaudi_standin.distributed.gloo_direct import install_direct_collectives
from gaudi_standin.distributed.gloo_host import GlooOnHostViews, as_list
from gaudi_standin.distributed.hccl_rules import (
    CAPTURE_REFUSED_MESSAGE,
    DTYPE_REFUSED_MESSAGE,
    HCCL_BACKEND_NAME,
    HCCL_REFUSED_MESSAGE,
    RECV_ANYSOURCE_MESSAGE,
    REDUCE_SCATTERED_AS_IS,
    REDUCED_AS_IS,
    GlooReductions,
    ReduceOpLike,
    cast_back,
    check_collective,
    check_hccl_reduce_op,
    checked_options,
    in_fp32,
)

if TYPE_CHECKING:
    from torch._C._distributed_c10d import Store  # ``torch.distributed`` re-exports it only implicitly

_register_lock = threading.Lock()

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


class HCCLStandInProcessGroup(dist.ProcessGroup):
    """A process group that follows HCCL's rules but runs over gloo on the CPU.

    The reduce collectives check the op and the dtypes, reduce what HCCL reduces in fp32 in fp32, and call the gloo
    backend; the other collectives call the gloo backend directly too (``gloo_direct`` says why none may be left to
    ``ProcessGroup``'s C++ implementation). None runs during an HPU graph capture.
    """

    def __init__(self, store: Store, rank: int, size: int, timeout: timedelta) -> None:
        # The (store, rank, size) constructor cannot build a Python subclass; the stubs only list that one.
        super().__init__(rank, size)  # type: ignore[call-arg]
        gloo = dist.ProcessGroupGloo(store, rank, size, timeout)
        self._set_default_backend(dist.ProcessGroup.BackendType.GLOO)
        for device in ("cpu", "hpu"):
            self._register_backend(torch.device(device), dist.ProcessGroup.BackendType.GLOO, gloo)
        on_host = GlooOnHostViews(gloo)
        self._gloo = cast(GlooReductions, on_host)
        self._gloo_any: Any = on_host

    def getBackendName(self) -> str:
        return HCCL_BACKEND_NAME

    def __repr__(self) -> str:
        return f"{type(self).__name__}(rank={self.rank()}, size={self.size()})"

    # --- collectives with a reduce op: refused like HCCL does, else run by gloo ----------------------

    def allreduce(  # type: ignore[override]
        self,
        tensors: torch.Tensor | Sequence[torch.Tensor],
        opts: dist.AllreduceOptions | ReduceOpLike | None = None,
        timeout: timedelta | None = None,
        *,
        op: ReduceOpLike | None = None,
    ) -> dist.Work:
        given = as_list(tensors)
        check_collective("all_reduce", given)
        options = checked_options(dist.AllreduceOptions(), opts, op, timeout)
        reduced = in_fp32(given, REDUCED_AS_IS)
        return cast_back(self._gloo.allreduce(reduced, options), given, reduced)

    def allreduce_coalesced(
        self, tensors: Sequence[torch.Tensor], opts: dist.AllreduceCoalescedOptions | None = None
    ) -> dist.Work:
        given = list(tensors)
        check_collective("all_reduce_coalesced", given)
        options = checked_options(dist.AllreduceCoalescedOptions(), opts, None, None)
        reduced = in_fp32(given, REDUCED_AS_IS)
        return cast_back(self._gloo.allreduce_coalesced(reduced, options), given, reduced)

    def reduce(  # type: ignore[override]
        self,
        tensors: torch.Tensor | Sequence[torch.Tensor],
        opts: dist.ReduceOptions | int | None = None,
        op: ReduceOpLike | None = None,
        timeout: timedelta | None = None,
        *,
        root: int | None = None,
    ) -> dist.Work:
        given = as_list(tensors)
        check_collective("reduce", given)
        if isinstance(opts, dist.ReduceOptions):
            options = checked_options(dist.ReduceOptions(), opts, None, timeout)
        else:  # the ``reduce(tensor, root, op, timeout)`` overload
            options = checked_options(dist.ReduceOptions(), None, op, timeout)
            options.rootRank = opts if opts is not None else (root or 0)
        reduced = in_fp32(given, REDUCED_AS_IS)
        return cast_back(self._gloo.reduce(reduced, options), given, reduced)

    def reduce_scatter(  # type: ignore[override]
        self,
        output_tensors: torch.Tensor | Sequence[torch.Tensor],
        input_tensors: Sequence[torch.Tensor] | Sequence[Sequence[torch.Tensor]],
        opts: dist.ReduceScatterOptions | ReduceOpLike | None = None,
        timeout: timedelta | None = None,
        *,
        op: ReduceOpLike | None = None,
    ) -> dist.Work:
        check_collective("reduce_scatter", (output_tensors, input_tensors))
        options = checked_options(dist.ReduceScatterOptions(), opts, op, timeout)
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
        check_collective("reduce_scatter_tensor", (outputTensor, inputTensor))
        options = checked_options(dist.ReduceScatterOptions(), opts, None, None)
        return self._reduce_scatter_tensor(outputTensor, inputTensor, options)

    def _reduce_scatter_tensor(
        self, output: torch.Tensor, input: torch.Tensor, options: dist.ReduceScatterOptions
    ) -> dist.Work:
        """One tensor reduce-scatter, with the dtypes the bridge does not reduce as they are reduced in fp32."""
        if output.dtype in REDUCE_SCATTERED_AS_IS:
            return self._gloo._reduce_scatter_base(output, input, options)
        reduced_output = output.float()
        work = self._gloo._reduce_scatter_base(reduced_output, input.float(), options)
        return cast_back(work, [output], [reduced_output])

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
        check_collective("reduce_scatter_tensor_coalesced", (outputTensors, inputTensors))
        options = checked_options(dist.ReduceScatterOptions(), opts, None, None)
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

    # --- collectives without a reduce op: run by gloo directly (``gloo_direct`` says why) --------------

    def broadcast(self, tensors: Any, opts: Any = None) -> dist.Work:  # type: ignore[override]
        # The bridge broadcasts bytes, whatever the dtype: complex tensors too.
        check_collective("broadcast", tensors, complex_allowed=True)
        if isinstance(tensors, torch.Tensor):  # the ``broadcast(tensor, root)`` overload
            options = dist.BroadcastOptions()
            options.rootRank = int(opts or 0)
            return self._gloo_any.broadcast([tensors], options)
        return self._gloo_any.broadcast(list(tensors), opts if opts is not None else dist.BroadcastOptions())

    def allgather(self, output_tensors: Any, input_tensors: Any, opts: Any = None) -> dist.Work:
        check_collective("all_gather", (output_tensors, input_tensors))
        if isinstance(input_tensors, torch.Tensor):  # the ``allgather(outputs, input)`` overload
            output_tensors, input_tensors = [list(output_tensors)], [input_tensors]
        options = opts if opts is not None else _AllgatherOptions()
        return self._gloo_any.allgather(output_tensors, input_tensors, options)

    def _allgather_base(self, output: Any, input: Any, opts: Any = None) -> dist.Work:
        check_collective("all_gather_into_tensor", (output, input))
        return self._gloo_any._allgather_base(output, input, opts if opts is not None else _AllgatherOptions())

    def barrier(self, opts: Any = None) -> dist.Work:
        check_collective("barrier", ())
        return self._gloo_any.barrier(opts if opts is not None else dist.BarrierOptions())

    def recv_anysource(self, tensors: Any, tag: int = 0) -> dist.Work:
        raise RuntimeError(
            f"{RECV_ANYSOURCE_MESSAGE} from any source: name the sending rank, e.g. dist.recv(tensor, src=0)."
        )


install_direct_collectives(HCCLStandInProcessGroup)


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
