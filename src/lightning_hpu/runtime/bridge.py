"""The Gaudi backend: the only module of the package that imports ``habana_frameworks``, and the only backend.

Every call here is one listed in docs/bridge-api.md (which also says what Intel Gaudi 1.23 and 1.24 changed); mypy
checks them against the typed stub in ``typings/habana_frameworks``. On the CPU stand-in ``habana_frameworks`` is
the stand-in's emulation of the bridge, so this code is what every test, example and benchmark runs. Importing this
module imports the bridge, so it is imported only once the backend is first asked for (see
:func:`lightning_hpu.runtime.get_backend`).
"""

from __future__ import annotations

import importlib.util
import warnings
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, ExitStack
from types import ModuleType
from typing import TYPE_CHECKING, Any

import habana_frameworks.torch.core as htcore
import habana_frameworks.torch.hpu as hthpu
import torch
from torch.optim import Optimizer
from typing_extensions import Unpack

from lightning_hpu.runtime.base import (
    MEMORY_STAT_KEYS,
    GraphHandle,
    HPUBackend,
    HPUConfigurationError,
    HPUFeatureUnavailableError,
)
from lightning_hpu.runtime.graph_options import GraphedCallablesOptions, InferenceGraphOptions
from lightning_hpu.runtime.optimizer_settings import AdamWSettings, SGDSettings

if TYPE_CHECKING:
    from habana_frameworks.torch.hpex.normalization import FusedClipNorm
    from habana_frameworks.torch.hpu.metrics import Metric


class BridgeBackend(HPUBackend):
    """Drives real Gaudis through the Intel Gaudi PyTorch bridge."""

    name = "hpu"

    def __init__(self) -> None:
        self._device_name: str | None = None
        # FusedClipNorm allocates its bound on the device, so one is kept per bound.
        self._clip_norms: dict[float, FusedClipNorm] = {}
        # Lazy-mode compilations are counted by a local metric while watched; those of windows closed before.
        self._compilation_window: ExitStack | None = None
        self._compilation_metric: Metric | None = None
        self._compilations_before = 0

    def is_available(self) -> bool:
        try:
            return hthpu.is_available()
        except ValueError as error:  # the bridge refused its environment (the stand-in's settings, say)
            raise HPUConfigurationError(str(error)) from None

    def device_count(self) -> int:
        return hthpu.device_count() if hthpu.is_available() else 0

    def device_name(self) -> str:
        # ``get_device_name`` acquires the device, so it is asked once and only when needed.
        if self._device_name is None:
            self._device_name = hthpu.get_device_name()
        return self._device_name

    def torch_device(self) -> torch.device:
        # Each process drives exactly one HPU, selected by HLS_MODULE_ID; tensors use the unindexed device.
        return torch.device("hpu")

    def follow_binding(self) -> None:
        # Asking the bridge for its device opens the module HLS_MODULE_ID binds this process to.
        hthpu.current_device()

    def set_device(self, local_rank: int) -> None:
        hthpu.set_device(local_rank)

    def current_device(self) -> int:
        return hthpu.current_device()

    def is_lazy(self) -> bool:
        return htcore.is_lazy()

    def mark_step(self) -> None:
        htcore.mark_step()

    def synchronize(self) -> None:
        hthpu.synchronize()

    def set_dynamic_shapes(self, enabled: bool) -> None:
        if enabled:
            hthpu.enable_dynamic_shape()
        else:
            hthpu.disable_dynamic_shape()

    def dynamic_shapes(self) -> bool:
        return hthpu.get_dynamic_shape_status()

    def memory_stats(self) -> dict[str, int]:
        stats = hthpu.memory_stats()
        return {key: int(stats.get(key, 0)) for key in MEMORY_STAT_KEYS}

    def reset_peak_memory_stats(self) -> None:
        hthpu.reset_peak_memory_stats()

    def supports_fp16(self) -> bool:
        from habana_frameworks.torch.utils.experimental import _is_fp16_supported

        return _is_fp16_supported()

    @property
    def autocast_device_type(self) -> str:
        return "hpu"

    @property
    def process_group_backend(self) -> str:
        return "hccl"

    @property
    def deepspeed_accelerator(self) -> str:
        return "hpu"

    def initialize_distributed(self, world_size: int, rank: int, local_rank: int) -> None:
        from habana_frameworks.torch.distributed.hccl import initialize_distributed_hpu

        # Registers the "hccl" c10d backend and binds HLS_MODULE_ID to this local rank.
        initialize_distributed_hpu(world_size=world_size, rank=rank, local_rank=local_rank)

    def fused_adamw(self, params: Iterable[Any], **settings: Unpack[AdamWSettings]) -> Optimizer:
        from habana_frameworks.torch.hpex.optimizers import FusedAdamW

        return FusedAdamW(params, **settings)

    def fused_sgd(self, params: Iterable[Any], **settings: Unpack[SGDSettings]) -> Optimizer:
        from habana_frameworks.torch.hpex.optimizers import FusedSGD

        return FusedSGD(params, **settings)

    def clip_grad_norm(self, parameters: Iterable[torch.Tensor], max_norm: float) -> torch.Tensor:
        from habana_frameworks.torch.hpex.normalization import FusedClipNorm

        params = list(parameters)
        clipper = self._clip_norms.get(max_norm)
        if clipper is None:
            clipper = self._clip_norms[max_norm] = FusedClipNorm(params, max_norm)
        return clipper.clip_norm(params)

    def transformer_engine(self) -> ModuleType:
        try:
            import habana_frameworks.torch.hpex.experimental.transformer_engine as te
        except ImportError as err:
            raise HPUFeatureUnavailableError(
                "fp8 training needs the Intel Gaudi Transformer Engine"
                " (habana_frameworks.torch.hpex.experimental.transformer_engine), which failed to import"
                f" ({err}); install the intel_transformer_engine package of your Gaudi software release."
            ) from None
        return te

    def profiler_activities(self) -> list[Any]:
        # Importing the bridge's activity profiler replaced ``torch.profiler.ProfilerActivity`` with an enum that has
        # ``HPU`` (reference section 9), and its ``torch.profiler.profile`` accepts only that enum's members. Reading
        # the attribute now, not at import, makes the import order of Lightning and the bridge irrelevant. A bridge
        # without that module (the CPU stand-in's, whose device is the host) records CPU activity.
        activity: Any = torch.profiler.ProfilerActivity
        if importlib.util.find_spec("habana_frameworks.torch.activity_profiler") is None:
            return [activity.CPU]
        if not hasattr(activity, "HPU"):
            warnings.warn(
                "The Intel Gaudi bridge did not add ProfilerActivity.HPU to torch.profiler; profiling records"
                " CPU activity only.",
                stacklevel=2,
            )
            return [activity.CPU]
        return [activity.CPU, activity.HPU]

    def watch_graph_compilations(self, enabled: bool) -> None:
        # The bridge's "graph_compilation" metric (reference section 4), counted in a local context while watched.
        if enabled == (self._compilation_window is not None) or not htcore.is_lazy():
            return
        if enabled:
            from habana_frameworks.torch.hpu.metrics import metric_localcontext

            self._compilation_window = ExitStack()
            self._compilation_metric = self._compilation_window.enter_context(metric_localcontext("graph_compilation"))
            return
        self._compilations_before = self._compilations_so_far()
        window, self._compilation_window, self._compilation_metric = self._compilation_window, None, None
        if window is not None:
            window.close()

    def _compilations_so_far(self) -> int:
        metric = self._compilation_metric
        return self._compilations_before + (_total_number(metric) if metric is not None else 0)

    def graph_compilation_count(self) -> int | None:
        if htcore.is_lazy():
            return self._compilations_so_far()
        # Eager mode: the recipes torch.compile's graphs cost the graph compiler in this process.
        from habana_frameworks.torch.hpu.metrics import metric_global

        metric = metric_global("graph_compilation")
        return None if metric is None else _total_number(metric)

    def close(self) -> None:
        self.watch_graph_compilations(False)

    def new_graph(self) -> GraphHandle:
        return hthpu.HPUGraph()

    def graph_capture(
        self, graph: GraphHandle, stream: Any = None, dry_run: bool = False
    ) -> AbstractContextManager[Any]:
        if not isinstance(graph, hthpu.HPUGraph):
            raise TypeError(f"The bridge captures into its own HPUGraph, not into a {type(graph).__name__}.")
        return hthpu.graph(graph, stream=stream, dry_run=dry_run)

    def make_graphed_callables(
        self, callables: Any, sample_args: tuple[Any, ...], **options: Unpack[GraphedCallablesOptions]
    ) -> Any:
        return hthpu.make_graphed_callables(callables, sample_args, **options)

    def module_cacher(self, max_graphs: int) -> Callable[..., torch.nn.Module]:
        return hthpu.ModuleCacher(max_graphs=max_graphs)

    def wrap_in_hpu_graph(
        self, module: torch.nn.Module, *, dry_run: bool | None = None, **options: Unpack[InferenceGraphOptions]
    ) -> torch.nn.Module:
        # ``dry_run=None`` lets newer bridges choose (dry run when the tensor cache is disabled); 1.19 wants a bool.
        chosen = options.get("disable_tensor_cache", False) if dry_run is None else dry_run
        return hthpu.wrap_in_hpu_graph(module, dry_run=chosen, **options)


def _total_number(metric: Metric) -> int:
    """The ``TotalNumber`` tag of a bridge metric's stats."""
    return int(dict(metric.stats()).get("TotalNumber", 0))
