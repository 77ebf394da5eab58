"""lightning-hpu 0.1.0's module paths, still imported, each with a ``DeprecationWarning`` that names its new path.

0.1.0 kept the Trainer's classes at the top of the package (``lightning_hpu.strategies``, ``lightning_hpu.plugins``,
``lightning_hpu.hpu_graphs.HPUGraphs``, ...); since ``lightning_hpu.pytorch`` stands beside ``lightning_hpu.fabric``
they live elsewhere. As Lightning's graveyard does for its moved names, the old paths keep working for now:

* a module that moved (:data:`MOVED_MODULES`) is served by a finder behind every real one on ``sys.meta_path``:
  importing it warns, naming the module to import instead, and its names are that module's, read when first asked;
* a name that moved out of a package that is still there (:data:`MOVED_NAMES`, ``HPUGraphs`` of
  ``lightning_hpu.hpu_graphs``) warns when read (the package's ``__getattr__`` is :func:`moved_names_of`) and is
  the object of its new path.

The targets are looked up by name when first asked, so this module stays below the Trainer layer.
``tests/data/lightning_hpu_0_1_0_modules.txt`` lists 0.1.0's modules and names, which the tests walk.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from collections.abc import Callable, Sequence
from typing import Any

_STRATEGIES = ("base", "deepspeed", "fsdp", "hccl", "last_batch", "model_parallel", "parallel", "sigterm", "single")
_PLUGINS = ("async_checkpoint_io", "checkpoint_io", "deepspeed_precision", "fsdp_precision", "precision")

#: 0.1.0's modules that moved, and the module that holds their names now.
MOVED_MODULES: dict[str, str] = {
    "lightning_hpu.accelerator": "lightning_hpu.pytorch.accelerator",
    "lightning_hpu.autocast_ops": "lightning_hpu.device.autocast_ops",
    "lightning_hpu.checkpoint_files": "lightning_hpu.checkpoint.files",
    "lightning_hpu.compile.callback": "lightning_hpu.pytorch.callbacks.compile",
    "lightning_hpu.compile.excluded_time": "lightning_hpu.pytorch.callbacks.excluded_time",
    "lightning_hpu.compile.monitor": "lightning_hpu.pytorch.callbacks.recompile_monitor",
    "lightning_hpu.compile.throughput": "lightning_hpu.pytorch.callbacks.throughput",
    "lightning_hpu.device_info": "lightning_hpu.integration.device_info_line",
    "lightning_hpu.device_rules": "lightning_hpu.device.generation_rules",
    "lightning_hpu.devices": "lightning_hpu.device.selection",
    "lightning_hpu.env_report": "lightning_hpu.support.env_report",
    "lightning_hpu.fabric.plugins.lightning_habana_arguments": "lightning_hpu.precision.lightning_habana_arguments",
    "lightning_hpu.fabric.strategies.rank_watchdog": "lightning_hpu.distributed.rank_watchdog_hooks",
    "lightning_hpu.fp8.callback": "lightning_hpu.pytorch.callbacks.fp8_inference",
    "lightning_hpu.fused_optimizers": "lightning_hpu.device.fused_optimizers",
    "lightning_hpu.hpu_graphs.callback": "lightning_hpu.pytorch.callbacks.hpu_graphs",
    "lightning_hpu.lightning_habana_paths": "lightning_hpu.support.lightning_habana_paths",
    "lightning_hpu.optimum.callback": "lightning_hpu.pytorch.callbacks.gaudi_config",
    "lightning_hpu.optimum.finite_mean": "lightning_hpu.device.finite_mean",
    "lightning_hpu.optimum.fused_adam": "lightning_hpu.device.fused_adam",
    "lightning_hpu.optimum.loss_logger": "lightning_hpu.pytorch.callbacks.loss_logger",
    "lightning_hpu.plugins": "lightning_hpu.pytorch.plugins",
    **{f"lightning_hpu.plugins.{name}": f"lightning_hpu.pytorch.plugins.{name}" for name in _PLUGINS},
    "lightning_hpu.plugins.model_parallel_precision": "lightning_hpu.pytorch.plugins.model_parallel_precision",
    "lightning_hpu.profiler.hpu": "lightning_hpu.pytorch.profilers.hpu",
    "lightning_hpu.profiler.steps": "lightning_hpu.pytorch.profilers.steps",
    "lightning_hpu.ray": "lightning_hpu.pytorch.ray",
    "lightning_hpu.ray.strategies": "lightning_hpu.pytorch.ray.strategies",
    "lightning_hpu.ray.twins": "lightning_hpu.integration.ray_objects",
    "lightning_hpu.ray.worker": "lightning_hpu.pytorch.ray.worker",
    "lightning_hpu.registration": "lightning_hpu.integration.registration",
    "lightning_hpu.strategies": "lightning_hpu.pytorch.strategies",
    **{f"lightning_hpu.strategies.{name}": f"lightning_hpu.pytorch.strategies.{name}" for name in _STRATEGIES},
    "lightning_hpu.strategies.rank_watchdog": "lightning_hpu.distributed.rank_watchdog_hooks",
    "lightning_hpu.strategy_arguments": "lightning_hpu.integration.strategy_arguments",
    "lightning_hpu.strategy_names": "lightning_hpu.integration.strategy_names",
    "lightning_hpu.strategy_objects": "lightning_hpu.integration.strategy_objects",
    "lightning_hpu.suggestions": "lightning_hpu.support.suggestions",
    "lightning_hpu.third_party_warnings": "lightning_hpu.integration.quiet_warnings",
    "lightning_hpu.user_errors": "lightning_hpu.support.user_errors",
    "lightning_hpu.versions": "lightning_hpu.support.versions",
}

#: Names that moved out of 0.1.0's packages that are still there: their ``module:name`` now (the package's top level,
#: where it exports them).
MOVED_NAMES: dict[str, dict[str, str]] = {
    "lightning_hpu.compile": {
        "HPUCompile": "lightning_hpu:HPUCompile",
        "HPUCompileError": "lightning_hpu.pytorch.callbacks:HPUCompileError",
        "HPURecompileMonitor": "lightning_hpu:HPURecompileMonitor",
        "HPUThroughputMonitor": "lightning_hpu:HPUThroughputMonitor",
    },
    "lightning_hpu.fp8": {"HPUFp8Inference": "lightning_hpu:HPUFp8Inference"},
    "lightning_hpu.hpu_graphs": {"HPUGraphs": "lightning_hpu:HPUGraphs"},
    "lightning_hpu.optimum": {"HPULossLogger": "lightning_hpu:HPULossLogger"},
    "lightning_hpu.profiler": {"HPUProfiler": "lightning_hpu:HPUProfiler"},
}


def _warn_moved(old: str, new: str) -> None:
    """The deprecation, attributed to the line of the program that imported or read ``old`` (``warnings`` skips the
    import machinery's frames between)."""
    warnings.warn(
        f"{old} is lightning-hpu 0.1.0's path: use {new} instead (the old path will be removed).",
        DeprecationWarning,
        stacklevel=3,
    )


def moved_names_of(package: str) -> Callable[[str], Any]:
    """The ``__getattr__`` of a package of 0.1.0 that is still there: its moved names (:data:`MOVED_NAMES`)."""
    table = MOVED_NAMES.get(package, {})

    def lookup(name: str) -> Any:
        if name not in table:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = table[name].partition(":")
        _warn_moved(f"{package}.{name}", f"`from {module} import {attribute}`")
        return getattr(importlib.import_module(module), attribute)

    return lookup


def _forwarding(new: str) -> Callable[[str], Any]:
    """The ``__getattr__`` of a moved module: the names of module ``new``."""

    def lookup(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(importlib.import_module(new), name)

    return lookup


class MovedPathFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves :data:`MOVED_MODULES`; behind every real finder, so a module that exists as a file always wins."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname in MOVED_MODULES:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None  # the default module object

    def exec_module(self, module: types.ModuleType) -> None:
        new = MOVED_MODULES[module.__name__]
        module.__doc__ = f"lightning-hpu 0.1.0's {module.__name__}, now {new}."
        module.__getattr__ = _forwarding(new)  # type: ignore[method-assign]
        _warn_moved(module.__name__, new)


def install() -> None:
    """Put the finder behind the real ones on ``sys.meta_path`` (once)."""
    if not any(isinstance(finder, MovedPathFinder) for finder in sys.meta_path):
        sys.meta_path.append(MovedPathFinder())
