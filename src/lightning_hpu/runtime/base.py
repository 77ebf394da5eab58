"""The runtime seam: what the package needs from the HPU runtime, in one interface.

The rest of the package never imports ``habana_frameworks``; it asks the :class:`HPUBackend` of the process (see
:func:`lightning_hpu.runtime.get_backend`) instead. Its one implementation, :class:`~lightning_hpu.runtime.bridge.
BridgeBackend`, calls the bridge's API, on a Gaudi and on the CPU stand-in (which serves that API), so the code the
tests run is the code that drives a Gaudi.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from types import ModuleType
from typing import Any, Protocol

import torch
from torch.distributed import ReduceOp
from torch.optim import Optimizer
from typing_extensions import Unpack

from lightning_hpu.runtime.graph_options import GraphedCallablesOptions, InferenceGraphOptions
from lightning_hpu.runtime.optimizer_settings import AdamWSettings, SGDSettings

#: Generations of Gaudi as reported by the bridge's ``get_device_name``.
GAUDI_GENERATIONS: tuple[str, ...] = ("GAUDI", "GAUDI2", "GAUDI3")

#: Keys of ``habana_frameworks.torch.hpu.memory_stats()``: the stand-in reports the same ones.
MEMORY_STAT_KEYS: tuple[str, ...] = (
    "Limit",
    "InUse",
    "MaxInUse",
    "NumAllocs",
    "NumFrees",
    "ActiveAllocs",
    "MaxAllocSize",
    "TotalSystemAllocs",
    "TotalSystemFrees",
    "TotalActiveAllocs",
)

#: The reduce ops that HCCL runs. The bridge refuses AVG (1.19; later releases run it as SUM then a division),
#: PREMUL_SUM and the bitwise ops; it maps PRODUCT to ``hcclProd``, which the HCCL library does not implement.
HCCL_REDUCE_OPS: frozenset[Any] = frozenset({ReduceOp.SUM, ReduceOp.MIN, ReduceOp.MAX})


class GraphHandle(Protocol):
    """An HPU graph as the backend makes it: the bridge's ``HPUGraph`` or the stand-in's."""

    def capture_begin(self, dry_run: bool = ...) -> None: ...
    def capture_end(self) -> None: ...
    def replay(self, asynchronous: bool = ...) -> None: ...
    def reset(self) -> None: ...


class UserErrorRecord:
    """Mixin of the errors for a user's mistake or machine: the latest message is kept, so that a script can still
    say it in one line when a library re-raises it inside its own error (jsonargparse does, in LightningCLI)."""

    latest_message: str | None = None

    def __init__(self, *args: object) -> None:
        super().__init__(*args)
        UserErrorRecord.latest_message = str(self)


class HPUNotAvailableError(UserErrorRecord, RuntimeError):
    """Raised when HPU was asked for but neither a Gaudi nor the CPU stand-in is there."""


class HPUFeatureUnavailableError(UserErrorRecord, RuntimeError):
    """Raised when a feature needs a package of the Gaudi software stack (e.g. the fp8 engine) that is missing."""


class HPUConfigurationError(UserErrorRecord, ValueError):
    """Raised when an argument or environment variable cannot work on HPU; the message names it and the fix."""


def generation_rank(device_name: str) -> int:
    """Return 1, 2 or 3 for GAUDI, GAUDI2, GAUDI3 (0 for anything unknown)."""
    name = device_name.upper()
    for rank, generation in sorted(enumerate(GAUDI_GENERATIONS, start=1), reverse=True):
        if name.startswith(generation):
            return rank
    return 0


class HPUBackend(ABC):
    """What the package needs from an HPU runtime (implemented by the bridge's backend)."""

    #: Short name shown in messages.
    name: str

    # --- devices ---------------------------------------------------------------------------
    @abstractmethod
    def is_available(self) -> bool:
        """Whether at least one HPU can be used by this process."""

    @abstractmethod
    def device_count(self) -> int:
        """Number of HPUs visible to this process (the real count, 0 when there are none)."""

    @abstractmethod
    def device_name(self) -> str:
        """The device generation: ``"GAUDI"``, ``"GAUDI2"`` or ``"GAUDI3"``."""

    @abstractmethod
    def torch_device(self) -> torch.device:
        """The torch device that tensors of this process live on."""

    def parallel_devices(self, count: int) -> list[torch.device]:
        """The torch device of each of ``count`` local processes (one HPU module each).

        On a Gaudi every process opens only its own module, which it addresses as the unindexed ``hpu`` device.
        """
        return [self.torch_device()] * count

    def close(self) -> None:  # noqa: B027 (optional hook, no-op by default)
        """Stop what this backend runs in the background (it is being replaced, see ``reset_backend``)."""

    @abstractmethod
    def follow_binding(self) -> None:
        """Use the HPU module ``HLS_MODULE_ID`` now binds this process to (the bridge opens it on first use)."""

    @abstractmethod
    def set_device(self, local_rank: int) -> None:
        """Bind this process to the HPU of the given local rank."""

    @abstractmethod
    def current_device(self) -> int:
        """The HPU module this process is bound to (``HLS_MODULE_ID``), 0 when it was not bound."""

    # --- execution -------------------------------------------------------------------------
    @abstractmethod
    def is_lazy(self) -> bool:
        """Whether ops are accumulated into graphs flushed by ``mark_step``: the legacy lazy mode.

        Current Gaudi software runs eager unless ``PT_HPU_LAZY_MODE=1``; eager mode compiles with ``torch.compile``.
        """

    @abstractmethod
    def mark_step(self) -> None:
        """Flush the accumulated graph (no-op in eager mode)."""

    @abstractmethod
    def synchronize(self) -> None:
        """Wait for the device to finish all queued work."""

    @abstractmethod
    def set_dynamic_shapes(self, enabled: bool) -> None:
        """Switch the graph compiler's dynamic shapes on or off for the rest of the process."""

    @abstractmethod
    def dynamic_shapes(self) -> bool:
        """Whether the graph compiler's dynamic shapes are on."""

    # --- memory ----------------------------------------------------------------------------
    @abstractmethod
    def memory_stats(self) -> dict[str, int]:
        """Device memory statistics with the bridge's keys (:data:`MEMORY_STAT_KEYS`)."""

    @abstractmethod
    def reset_peak_memory_stats(self) -> None:
        """Reset ``MaxInUse`` to the current use."""

    def native_int64(self) -> bool:
        """Whether int64 tensors keep 64 bits on the device.

        In lazy mode a Gaudi holds int64 as int32 on the whole device; in eager mode int64 is native from Gaudi2 on
        (Gaudi 1 holds it as int32 there too).
        """
        return not self.is_lazy() and generation_rank(self.device_name()) >= 2

    # --- precision -------------------------------------------------------------------------
    @property
    @abstractmethod
    def autocast_device_type(self) -> str:
        """The ``device_type`` to give ``torch.autocast``."""

    def supports_fp16(self) -> bool:
        """fp16 needs Gaudi2 or later."""
        return generation_rank(self.device_name()) >= 2

    def supports_fp8(self) -> bool:
        """fp8 needs Gaudi2 or later."""
        return generation_rank(self.device_name()) >= 2

    # --- distributed -----------------------------------------------------------------------
    @property
    @abstractmethod
    def process_group_backend(self) -> str:
        """The ``torch.distributed`` backend name: ``"hccl"`` on a Gaudi."""

    @abstractmethod
    def initialize_distributed(self, world_size: int, rank: int, local_rank: int) -> None:
        """Prepare the process for collectives before the process group is created."""

    supported_reduce_ops: frozenset[Any] = HCCL_REDUCE_OPS

    # --- fused optimizers, clipping, fp8 engine ----------------------------------------------
    @abstractmethod
    def fused_adamw(self, params: Iterable[Any], **settings: Unpack[AdamWSettings]) -> Optimizer:
        """AdamW with every hyperparameter given (Habana's ``FusedAdamW`` on a Gaudi)."""

    @abstractmethod
    def fused_sgd(self, params: Iterable[Any], **settings: Unpack[SGDSettings]) -> Optimizer:
        """SGD with every hyperparameter given (Habana's ``FusedSGD`` on a Gaudi)."""

    @abstractmethod
    def clip_grad_norm(self, parameters: Iterable[torch.Tensor], max_norm: float) -> torch.Tensor:
        """Scale the gradients in place so their total 2-norm is at most ``max_norm``; return the norm before."""

    @abstractmethod
    def transformer_engine(self) -> ModuleType:
        """The fp8 Transformer Engine module (``Linear``, ``fp8_autocast``, ``recipe``), or a clear error."""

    # --- profiling -------------------------------------------------------------------------
    @abstractmethod
    def profiler_activities(self) -> list[Any]:
        """The ``torch.profiler.ProfilerActivity`` members that record this device, read when called.

        On a Gaudi the bridge replaces ``torch.profiler.ProfilerActivity`` with its own enum (which adds ``HPU``),
        so the members must come from whatever ``torch.profiler.ProfilerActivity`` is now, not from an import.
        """

    # --- HPU graphs (lazy mode only; argument names follow the bridge) -----------------------
    @abstractmethod
    def new_graph(self) -> GraphHandle:
        """A fresh, empty HPU graph."""

    @abstractmethod
    def graph_capture(
        self, graph: GraphHandle, stream: Any = None, dry_run: bool = False
    ) -> AbstractContextManager[Any]:
        """A context manager that captures the work done inside it into ``graph``."""

    @abstractmethod
    def make_graphed_callables(
        self, callables: Any, sample_args: tuple[Any, ...], **options: Unpack[GraphedCallablesOptions]
    ) -> Any:
        """Graph forward and backward of each callable."""

    @abstractmethod
    def module_cacher(self, max_graphs: int) -> Callable[..., torch.nn.Module]:
        """The ``ModuleCacher(max_graphs)`` object, to be called with the model and its options."""

    @abstractmethod
    def wrap_in_hpu_graph(
        self, module: torch.nn.Module, *, dry_run: bool | None = None, **options: Unpack[InferenceGraphOptions]
    ) -> torch.nn.Module:
        """Patch ``module.forward`` to capture and replay an inference graph per input shape.

        ``dry_run=None`` lets the bridge choose: a dry run when the tensor cache is disabled.
        """

    # --- graph compilations (read by HPURecompileMonitor) ---------------------------------------
    def watch_graph_compilations(self, enabled: bool) -> None:  # noqa: B027 (optional hook, no-op by default)
        """Start or stop counting lazy-mode graph compilations (counted only while watched)."""

    def graph_compilation_count(self) -> int | None:
        """Graphs (recipes) the device's graph compiler built, or ``None`` where not counted.

        In lazy mode: those built while watched (:meth:`watch_graph_compilations`), one per new graph signature
        between step markers. In eager mode with ``torch.compile``: those of the process, one per compiled graph and
        concrete input shapes.
        """
        return None

    # --- DeepSpeed -------------------------------------------------------------------------
    @property
    @abstractmethod
    def deepspeed_accelerator(self) -> str:
        """DeepSpeed's name of the accelerator driving this device (``"hpu"``); ``DS_ACCELERATOR`` defaults to it."""
