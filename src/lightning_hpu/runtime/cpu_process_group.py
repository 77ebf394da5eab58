"""An ``"hccl"`` process group for the CPU stand-in: gloo underneath, HCCL's rules on top.

On a Gaudi, ``torch.distributed`` runs over HCCL, which refuses some reduce ops (``AVG``,
``PREMUL_SUM`` and the bitwise ones). Code that works over gloo can therefore fail on the device.
:func:`register_hccl_standin_backend` registers a backend named ``"hccl"`` for the CPU whose process
group hands every collective to a real gloo backend, but refuses those reduce ops with the bridge's
own error. Code tested on the stand-in then fails in CI where it would fail on a Gaudi.

How: torch 2.13 does not let Python subclass ``c10d.Backend`` (it has no Python constructor), but it
does let Python subclass ``c10d.ProcessGroup`` (a pybind trampoline, as torch's threaded test
process group does). A creator function registered with ``Backend.register_backend`` may return
such a subclass, and ``init_process_group``/``new_group`` then use it as the group itself. Our
subclass registers a ``ProcessGroupGloo`` as its CPU backend, so every collective it does not
override goes through the C++ base class to gloo, and it overrides the collectives that take a
reduce op to check the op first. The trampoline sends C++ callers (DDP's reducer, functional
collectives) to the Python overrides as well.
"""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed import ReduceOp

from lightning_hpu.runtime.base import HCCL_REDUCE_OPS

__all__ = [
    "HCCL_BACKEND_NAME",
    "HCCL_REFUSED_MESSAGE",
    "HCCLStandInProcessGroup",
    "register_hccl_standin_backend",
]

#: The name ``torch.distributed`` knows Gaudi's collective library by.
HCCL_BACKEND_NAME = "hccl"

#: The error the bridge's ``ProcessGroupHCCL`` raises for a reduce op HCCL does not implement.
HCCL_REFUSED_MESSAGE = "Unsupported ReduceOp for HCCL process group"

_register_lock = threading.Lock()


def _check_reduce_op(op: Any) -> None:
    """Raise like HCCL does unless ``op`` (a ``ReduceOp`` or ``ReduceOp.RedOpType``) is one HCCL has."""
    # ``opts.reduceOp`` is a ``ReduceOp`` object, the members of ``HCCL_REDUCE_OPS`` are ``RedOpType``
    # values: a set lookup of the former does not find the latter, so compare the ``RedOpType``.
    op_type = op.op if isinstance(op, ReduceOp) else op
    if op_type not in HCCL_REDUCE_OPS:
        raise RuntimeError(HCCL_REFUSED_MESSAGE)


def _allreduce_options(opts: Any) -> dist.AllreduceOptions:
    """Accept what ``ProcessGroup.allreduce``'s overloads accept: options, a ``ReduceOp`` or nothing."""
    if isinstance(opts, dist.AllreduceOptions):
        return opts
    options = dist.AllreduceOptions()
    if opts is not None:
        options.reduceOp = opts if isinstance(opts, ReduceOp) else ReduceOp(opts)
    return options


class HCCLStandInProcessGroup(dist.ProcessGroup):
    """A process group that behaves like HCCL's but runs over gloo on the CPU.

    Reduce collectives check the op and delegate to the gloo backend; all other collectives are not
    overridden here and reach the same gloo backend through ``ProcessGroup``'s C++ implementation.
    """

    def __init__(self, store: dist.Store, rank: int, size: int, timeout: timedelta) -> None:
        super().__init__(rank, size)  # the (store, rank, size) constructor has no Python-subclass form
        self._gloo = dist.ProcessGroupGloo(store, rank, size, timeout)
        cpu = torch.device("cpu")
        self._set_default_backend(dist.ProcessGroup.BackendType.GLOO)
        self._register_backend(cpu, dist.ProcessGroup.BackendType.GLOO, self._gloo)

    def getBackendName(self) -> str:  # noqa: N802  (name of the C++ virtual overridden)
        return HCCL_BACKEND_NAME

    def __repr__(self) -> str:
        return f"HCCLStandInProcessGroup(rank={self.rank()}, size={self.size()})"

    # --- collectives with a reduce op: refused like HCCL, else delegated to gloo ------------------
    def allreduce(self, tensors: Any, opts: Any = None) -> dist.Work:  # type: ignore[override]
        if isinstance(tensors, torch.Tensor):  # the ``allreduce(tensor, op)`` overload
            tensors = [tensors]
        options = _allreduce_options(opts)
        _check_reduce_op(options.reduceOp)
        return self._gloo.allreduce(tensors, options)

    def allreduce_coalesced(  # type: ignore[override]
        self, tensors: list[torch.Tensor], opts: dist.AllreduceCoalescedOptions | None = None
    ) -> dist.Work:
        options = opts if opts is not None else dist.AllreduceCoalescedOptions()
        _check_reduce_op(options.reduceOp)
        return self._gloo.allreduce_coalesced(tensors, options)

    def reduce(  # type: ignore[override]
        self, tensors: list[torch.Tensor], opts: dist.ReduceOptions | None = None
    ) -> dist.Work:
        options = opts if opts is not None else dist.ReduceOptions()
        _check_reduce_op(options.reduceOp)
        return self._gloo.reduce(tensors, options)

    def reduce_scatter(  # type: ignore[override]
        self,
        output_tensors: list[torch.Tensor],
        input_tensors: list[list[torch.Tensor]],
        opts: dist.ReduceScatterOptions | None = None,
    ) -> dist.Work:
        options = opts if opts is not None else dist.ReduceScatterOptions()
        _check_reduce_op(options.reduceOp)
        return self._gloo.reduce_scatter(output_tensors, input_tensors, options)

    def reduce_scatter_single(
        self,
        output: torch.Tensor,
        input: torch.Tensor,  # noqa: A002  (torch's parameter name)
        opts: dist.ReduceScatterOptions | None = None,
    ) -> dist.Work:
        options = opts if opts is not None else dist.ReduceScatterOptions()
        _check_reduce_op(options.reduceOp)
        return self._gloo._reduce_scatter_base(output, input, options)

    # Older name of ``reduce_scatter_single`` (``dist.reduce_scatter_tensor`` in torch < 2.13).
    _reduce_scatter_base = reduce_scatter_single

    def reduce_scatter_single_coalesced(
        self,
        outputs: list[torch.Tensor],
        inputs: list[torch.Tensor],
        opts: dist.ReduceScatterOptions | None = None,
    ) -> dist.Work:
        options = opts if opts is not None else dist.ReduceScatterOptions()
        _check_reduce_op(options.reduceOp)
        # gloo has no coalesced reduce-scatter: run them one after the other, like torch's threaded pg.
        works = [self._gloo._reduce_scatter_base(out, inp, options) for out, inp in zip(outputs, inputs, strict=True)]
        for work in works[:-1]:
            work.wait()
        return works[-1]

    # Older name of ``reduce_scatter_single_coalesced``.
    reduce_scatter_tensor_coalesced = reduce_scatter_single_coalesced


def _create_hccl_standin(
    store: dist.Store, group_rank: int, group_size: int, timeout: timedelta
) -> HCCLStandInProcessGroup:
    """The creator ``Backend.register_backend`` calls (non-extended API: store, rank, size, timeout)."""
    return HCCLStandInProcessGroup(store, group_rank, group_size, timeout)


def register_hccl_standin_backend() -> None:
    """Register the ``"hccl"`` backend for the CPU; do nothing if ``"hccl"`` is already registered.

    After this, ``dist.init_process_group(backend="hccl")`` on the CPU stand-in gives a gloo-backed
    group that refuses ``AVG``, ``PREMUL_SUM``, ``BAND``, ``BOR`` and ``BXOR`` like HCCL does.
    """
    with _register_lock:
        if HCCL_BACKEND_NAME in dist.Backend.backend_list or HCCL_BACKEND_NAME.upper() in dist.Backend._plugins:
            return  # the bridge's real backend, or ours from an earlier call
        dist.Backend.register_backend(HCCL_BACKEND_NAME, _create_hccl_standin, devices=["cpu"])
