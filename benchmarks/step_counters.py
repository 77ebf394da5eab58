"""Counting what a training step asks of the device: host syncs and collectives, per steady step.

Shared by the benchmarks in this folder and by the tests' multi-process scenarios. :class:`StepCounters` wraps, once
per process,

* the tensor methods that make the host wait for the device (``.item()``, ``.tolist()``, ``.numpy()``, ``.cpu()``,
  ``bool()``/``int()``/``float()`` of a tensor) and the backend's ``synchronize``;
* every collective of the stand-in's ``"hccl"`` process group (the device's collectives, whether Python or DDP's
  C++ reducer calls them) and the ``torch.distributed`` functions, by name;
* the host-side SIGTERM vote (:class:`lightning_hpu.pytorch.strategies.sigterm.HostFlagVote`), counted apart: it runs
  on a gloo group and never touches the device.

:class:`CountSteadySteps` turns counting on at the start of batch ``warmup`` and off ``steps`` batches later, so
the window holds whole training batches (the loop's per-batch work at their start included) and no set-up.
:class:`TensorAllocations` counts the aten ops that return a new tensor (not a view, not an in-place or ``out=``
result) while it is active.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
from lightning.pytorch import Callback, LightningModule, Trainer
from torch.utils._python_dispatch import TorchDispatchMode

from gaudi_standin.distributed.process_group import HCCLStandInProcessGroup
from lightning_hpu.pytorch.strategies import sigterm
from lightning_hpu.runtime import require_backend

HOST_SYNC_METHODS = ("item", "tolist", "numpy", "cpu", "__bool__", "__int__", "__float__", "__index__")
DEVICE_COLLECTIVES = (
    "allreduce",
    "allreduce_coalesced",
    "broadcast",
    "allgather",
    "_allgather_base",
    "reduce",
    "reduce_scatter",
    "reduce_scatter_single",
    "barrier",
    "alltoall",
    "alltoall_base",
    "gather",
    "scatter",
    "send",
    "recv",
)
DIST_FUNCTIONS = ("broadcast", "all_reduce", "all_gather", "all_gather_into_tensor", "barrier", "reduce_scatter_tensor")


class StepCounters:
    """Counts host syncs, device collectives and host votes while :attr:`active` (see the module docstring)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.active = False
        self._installed = False

    def _counting(self, key: str, original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if self.active:
                self.counts[key] += 1
            return original(*args, **kwargs)

        return wrapper

    def install(self) -> StepCounters:
        """Wrap the methods (once per process); counting starts with :meth:`start`."""
        if self._installed:
            return self
        for name in HOST_SYNC_METHODS:
            setattr(torch.Tensor, name, self._counting(f"sync:{name}", getattr(torch.Tensor, name)))
        backend = require_backend()
        backend.synchronize = self._counting("sync:synchronize", backend.synchronize)  # type: ignore[method-assign]
        for name in DEVICE_COLLECTIVES:
            if name in HCCLStandInProcessGroup.__dict__:
                original = HCCLStandInProcessGroup.__dict__[name]
                setattr(HCCLStandInProcessGroup, name, self._counting(f"device:{name}", original))
        for name in DIST_FUNCTIONS:
            setattr(dist, name, self._counting(f"dist:{name}", getattr(dist, name)))
        sigterm.HostFlagVote.vote = self._counting("host:sigterm_vote", sigterm.HostFlagVote.vote)  # type: ignore[method-assign]
        self._installed = True
        return self

    def start(self) -> None:
        self.counts.clear()
        self.active = True

    def stop(self) -> None:
        self.active = False

    def per_step(self, steps: int) -> dict[str, float]:
        return {key: count / steps for key, count in sorted(self.counts.items())}

    def host_syncs(self) -> int:
        return sum(count for key, count in self.counts.items() if key.startswith("sync:"))

    def device_collectives(self, *, excluding: tuple[str, ...] = ()) -> int:
        return sum(
            count
            for key, count in self.counts.items()
            if key.startswith("device:") and key.removeprefix("device:") not in excluding
        )


COUNTERS = StepCounters()


class CountSteadySteps(Callback):
    """Counts with :data:`COUNTERS` from the start of batch ``warmup`` to the start of batch ``warmup + steps``."""

    def __init__(self, warmup: int = 3, steps: int = 5) -> None:
        self.warmup = warmup
        self.steps = steps
        self.result: dict[str, float] | None = None
        self._batches = 0
        COUNTERS.install()

    def on_train_batch_start(self, trainer: Trainer, pl_module: LightningModule, batch: Any, batch_idx: int) -> None:
        if self._batches == self.warmup:
            COUNTERS.start()
        elif self._batches == self.warmup + self.steps:
            COUNTERS.stop()
            self.result = COUNTERS.per_step(self.steps)
        self._batches += 1


class TensorAllocations(TorchDispatchMode):
    """Counts aten ops that allocate a tensor for their result, by op name (``with TensorAllocations() as seen:``)."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: Counter[str] = Counter()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        returns = func._schema.returns
        if any(str(ret.type) in ("Tensor", "Tensor[]") and ret.alias_info is None for ret in returns):
            self.ops[str(func)] += 1
        return func(*args, **(kwargs or {}))

    @property
    def total(self) -> int:
        return sum(self.ops.values())
