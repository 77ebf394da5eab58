"""A pytest plugin serving ``lightning_habana.*`` imports from lightning-hpu: the peer suite's renaming layer.

lightning-habana 1.7's tests import its modules by their paths (``lightning_habana.pytorch.strategies.deepspeed``,
``lightning_habana.utils.resources``, ...). Each name those modules exported is mapped onto what README's "Coming
from lightning-habana" table says to write instead, and nothing else: a name the table does not carry over is
absent, so the test that imports it fails on that name (and is counted as such by ``scripts/peer_suite.py``).
Loaded with ``pytest -p lightning_habana_alias`` before the suite's conftest imports ``lightning_habana``.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import operator
import os
import sys
import types
from collections.abc import Callable, Sequence
from typing import Any

os.environ.setdefault("LIGHTNING_HPU_BACKEND", "cpu")

#: An alias: ``"module:attribute"`` of lightning-hpu (or a dependency), or a function computing the value.
Target = str | Callable[[], Any]


def _accelerator() -> Any:
    from lightning_hpu import HPUAccelerator

    return HPUAccelerator


def _resources() -> dict[str, Target]:
    """``lightning_habana.utils.resources``: README's table names the replacement of each function."""
    from lightning_hpu import get_backend

    def fp8_available() -> tuple[bool, str]:
        ok = get_backend().supports_fp8()
        return ok, "" if ok else "FP8 not supported on Gaudi, Gaudi2 or higher required"

    def fp16_available() -> tuple[bool, str]:
        ok = get_backend().supports_fp16()
        return ok, "" if ok else "FP16 not supported on Gaudi, Gaudi2 or higher required."

    return {
        "device_count": lambda: _accelerator().auto_device_count,
        "get_device_name_from_hlsmi": lambda: _accelerator().get_device_name,
        "get_device_name_from_backend": lambda: _accelerator().get_device_name,
        "get_device_stats": lambda: lambda device: _accelerator()().get_device_stats(device),
        "is_fp8_available": lambda: fp8_available,
        "is_fp16_available": lambda: fp16_available,
    }


def _lightning_at_least(version: str) -> Callable[[], bool]:
    def check() -> bool:
        from lightning_utilities import compare_version

        return compare_version("lightning", operator.ge, version, use_base_version=True)

    return check


def _reduce_ops() -> dict[str, Any]:
    """lightning-habana's ``{name: op}`` of the reductions HCCL runs, from lightning-hpu's set of them."""
    from lightning_hpu.runtime import HCCL_REDUCE_OPS

    return {op.name.lower(): op for op in sorted(HCCL_REDUCE_OPS, key=int)}


_PYTORCH = {
    "HPUAccelerator": "lightning_hpu:HPUAccelerator",
    "HPUDDPStrategy": "lightning_hpu:HPUDDPStrategy",
    "HPUParallelStrategy": "lightning_hpu:HPUParallelStrategy",
    "SingleHPUStrategy": "lightning_hpu:SingleHPUStrategy",
    "HPUDeepSpeedStrategy": "lightning_hpu:HPUDeepSpeedStrategy",
    "HPUFSDPStrategy": "lightning_hpu:HPUFSDPStrategy",
    "HPUPrecisionPlugin": "lightning_hpu:HPUPrecisionPlugin",
    "HPUDeepSpeedPrecisionPlugin": "lightning_hpu:HPUDeepSpeedPrecisionPlugin",
    "HPUFSDPPrecision": "lightning_hpu:HPUFSDPPrecision",
    "HPUCheckpointIO": "lightning_hpu:HPUCheckpointIO",
    "HPUProfiler": "lightning_hpu:HPUProfiler",
}
_FABRIC = {
    "HPUAccelerator": "lightning_hpu:HPUAccelerator",
    "HPUDDPStrategy": "lightning_hpu.fabric.strategies:HPUParallelStrategy",
    "HPUParallelStrategy": "lightning_hpu.fabric.strategies:HPUParallelStrategy",
    "SingleHPUStrategy": "lightning_hpu.fabric.strategies:SingleHPUStrategy",
    "HPUFSDPStrategy": "lightning_hpu.fabric.sharded_strategies:HPUFSDPStrategy",
    "HPUPrecision": "lightning_hpu:HPUPrecision",
    "HPUFSDPPrecision": "lightning_hpu.fabric.fsdp_precision:HPUFSDPPrecision",
    "HPUCheckpointIO": "lightning_hpu:HPUCheckpointIO",
}


def _pick(table: dict[str, Target], names: Sequence[str]) -> dict[str, Target]:
    return {name: table[name] for name in names}


#: Every module of lightning-habana 1.7 its tests import, and the names it exported.
ALIASES: dict[str, dict[str, Target]] = {
    "lightning_habana": {
        **_PYTORCH,
        "HPU_AVAILABLE": lambda: _accelerator().is_available(),
    },
    "lightning_habana.pytorch": _PYTORCH,
    "lightning_habana.pytorch.accelerator": _pick(_PYTORCH, ["HPUAccelerator"]),
    "lightning_habana.pytorch.strategies": _pick(
        _PYTORCH,
        ["HPUDDPStrategy", "HPUParallelStrategy", "SingleHPUStrategy", "HPUDeepSpeedStrategy", "HPUFSDPStrategy"],
    ),
    "lightning_habana.pytorch.strategies.ddp": _pick(_PYTORCH, ["HPUDDPStrategy"]),
    "lightning_habana.pytorch.strategies.parallel": _pick(_PYTORCH, ["HPUParallelStrategy"]),
    "lightning_habana.pytorch.strategies.single": _pick(_PYTORCH, ["SingleHPUStrategy"]),
    "lightning_habana.pytorch.strategies.fsdp": _pick(_PYTORCH, ["HPUFSDPStrategy"]),
    "lightning_habana.pytorch.strategies.deepspeed": {
        **_pick(_PYTORCH, ["HPUDeepSpeedStrategy"]),
        "_HPU_DEEPSPEED_AVAILABLE": lambda: importlib.util.find_spec("deepspeed") is not None,
    },
    "lightning_habana.pytorch.plugins": _pick(
        _PYTORCH, ["HPUPrecisionPlugin", "HPUCheckpointIO", "HPUDeepSpeedPrecisionPlugin", "HPUFSDPPrecision"]
    ),
    "lightning_habana.pytorch.plugins.precision": {
        **_pick(_PYTORCH, ["HPUPrecisionPlugin"]),
        "_PRECISION_INPUT": "lightning_hpu.fabric.precision:HPUPrecisionInput",
    },
    "lightning_habana.pytorch.plugins.deepspeed_precision": _pick(_PYTORCH, ["HPUDeepSpeedPrecisionPlugin"]),
    "lightning_habana.pytorch.plugins.fsdp_precision": _pick(_PYTORCH, ["HPUFSDPPrecision", "HPUPrecisionPlugin"]),
    "lightning_habana.pytorch.plugins.io_plugin": _pick(_PYTORCH, ["HPUCheckpointIO"]),
    "lightning_habana.pytorch.profiler": _pick(_PYTORCH, ["HPUProfiler"]),
    "lightning_habana.pytorch.profiler.profiler": _pick(_PYTORCH, ["HPUProfiler"]),
    "lightning_habana.fabric": _FABRIC,
    "lightning_habana.fabric.accelerator": _pick(_FABRIC, ["HPUAccelerator"]),
    "lightning_habana.fabric.strategies": _pick(
        _FABRIC, ["HPUDDPStrategy", "HPUParallelStrategy", "SingleHPUStrategy", "HPUFSDPStrategy"]
    ),
    "lightning_habana.fabric.strategies.ddp": _pick(_FABRIC, ["HPUDDPStrategy"]),
    "lightning_habana.fabric.strategies.parallel": _pick(_FABRIC, ["HPUParallelStrategy"]),
    "lightning_habana.fabric.strategies.single": _pick(_FABRIC, ["SingleHPUStrategy"]),
    "lightning_habana.fabric.strategies.fsdp": _pick(_FABRIC, ["HPUFSDPStrategy"]),
    "lightning_habana.fabric.plugins": _pick(_FABRIC, ["HPUPrecision", "HPUFSDPPrecision", "HPUCheckpointIO"]),
    "lightning_habana.fabric.plugins.precision": _pick(_FABRIC, ["HPUPrecision"]),
    "lightning_habana.fabric.plugins.fsdp_precision": _pick(_FABRIC, ["HPUFSDPPrecision"]),
    "lightning_habana.fabric.plugins.io_plugin": _pick(_FABRIC, ["HPUCheckpointIO"]),
    "lightning_habana.pytorch.plugins.quant_config": {},
    "lightning_habana.utils": {},
    "lightning_habana.utils.resources": {"__lazy__": _resources},
    "lightning_habana.utils.imports": {
        "_LIGHTNING_GREATER_EQUAL_2_0_0": _lightning_at_least("2.0.0"),
        "_LIGHTNING_GREATER_EQUAL_2_3_0": _lightning_at_least("2.3.0"),
    },
    "lightning_habana.utils.hpu_distributed": {
        "supported_reduce_ops": _reduce_ops,
    },
}


#: lightning-habana packages of data files, served by the lightning-hpu package holding the same files.
PACKAGES = {
    "lightning_habana.pytorch.plugins.quant_config.fp8": "lightning_hpu.fp8.configs",
}


def _resolve(target: Target) -> Any:
    if callable(target):
        return target()
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


class _AliasModule(types.ModuleType):
    """A ``lightning_habana`` module whose names resolve, when first read, to lightning-hpu's."""

    def __init__(self, name: str, table: dict[str, Target]) -> None:
        super().__init__(name)
        self.__path__: list[str] = []  # a package, so its submodules import
        lazy = table.get("__lazy__")
        self._table = {name: target for name, target in table.items() if name != "__lazy__"}
        if callable(lazy):
            self._table.update(lazy())
        self.__all__ = list(self._table)

    def __getattr__(self, name: str) -> Any:
        table = self.__dict__.get("_table", {})
        if name not in table:
            raise AttributeError(
                f"lightning_habana alias {self.__name__!r} has no {name!r}: not carried over to lightning-hpu"
            )
        value = _resolve(table[name])
        setattr(self, name, value)
        return value


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    @staticmethod
    def find_spec(fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname in ALIASES or fullname in PACKAGES:
            return importlib.machinery.ModuleSpec(fullname, _AliasFinder, is_package=True)
        return None

    @staticmethod
    def create_module(spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        if spec.name in PACKAGES:
            return importlib.import_module(PACKAGES[spec.name])
        return _AliasModule(spec.name, ALIASES[spec.name])

    @staticmethod
    def exec_module(module: types.ModuleType) -> None:
        return None


if not any(isinstance(finder, _AliasFinder) for finder in sys.meta_path):
    sys.meta_path.insert(0, _AliasFinder())
