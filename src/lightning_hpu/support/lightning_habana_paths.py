"""lightning-habana's module paths under ``lightning_hpu``, so that its users only rename the package in imports.

``from lightning_habana.pytorch.strategies.deepspeed import HPUDeepSpeedStrategy`` becomes
``from lightning_hpu.pytorch.strategies.deepspeed import HPUDeepSpeedStrategy``, and so on for every module of
lightning-habana 1.7 (``pytorch.*``, ``fabric.*``, ``utils.*``). These modules hold no code of their own: each name
resolves, when first read, to the class or function the table of docs/guide/coming-from-lightning-habana.md names,
and a name that was not carried over fails its import with one sentence saying what to use instead. A finder placed
behind every real one on ``sys.meta_path`` serves them, so a module of this package that exists as a file always wins:
``lightning_hpu.fabric.strategies.{parallel,single,fsdp}`` and ``lightning_hpu.fabric.plugins.{precision,
fsdp_precision}`` are such real modules, holding the classes lightning-habana's modules of those names exported.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from collections.abc import Callable, Sequence
from typing import Any

from lightning_hpu.runtime import get_backend

#: A name's target: ``"module:attribute"`` of lightning-hpu, or a function computing the value.
Target = str | Callable[[], Any]

_PYTORCH: dict[str, Target] = {
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
_FABRIC: dict[str, Target] = {
    "HPUAccelerator": "lightning_hpu:HPUAccelerator",
    "HPUDDPStrategy": "lightning_hpu.fabric.strategies:HPUParallelStrategy",
    "HPUParallelStrategy": "lightning_hpu.fabric.strategies:HPUParallelStrategy",
    "SingleHPUStrategy": "lightning_hpu.fabric.strategies:SingleHPUStrategy",
    "HPUFSDPStrategy": "lightning_hpu.fabric.strategies:HPUFSDPStrategy",
    "HPUPrecision": "lightning_hpu:HPUPrecision",
    "HPUFSDPPrecision": "lightning_hpu.fabric.plugins.fsdp_precision:HPUFSDPPrecision",
    "HPUCheckpointIO": "lightning_hpu:HPUCheckpointIO",
}


def _accelerator() -> Any:
    """The Trainer's accelerator, looked up like every target (this module stays below the Trainer layer)."""
    return resolve("lightning_hpu:HPUAccelerator")


def _fp8_available() -> tuple[bool, str]:
    """lightning-habana's ``is_fp8_available()``: whether fp8 runs here, and why not."""
    backend = get_backend()
    available = backend is not None and backend.supports_fp8()
    return available, "" if available else "FP8 not supported on Gaudi, Gaudi2 or higher required"


def _fp16_available() -> tuple[bool, str]:
    """lightning-habana's ``is_fp16_available()``: whether fp16 runs here, and why not."""
    backend = get_backend()
    available = backend is not None and backend.supports_fp16()
    return available, "" if available else "FP16 not supported on Gaudi, Gaudi2 or higher required."


def _device_stats(device: Any = None) -> dict[str, Any]:
    """lightning-habana's ``get_device_stats(device)``: the device's memory statistics."""
    return dict(_accelerator()().get_device_stats(device))


_RESOURCES: dict[str, Target] = {
    "device_count": lambda: _accelerator().auto_device_count,
    "get_device_name_from_hlsmi": lambda: _accelerator().get_device_name,
    "get_device_name_from_backend": lambda: _accelerator().get_device_name,
    "get_device_stats": lambda: _device_stats,
    "is_fp8_available": lambda: _fp8_available,
    "is_fp16_available": lambda: _fp16_available,
}


def _kineto_available() -> bool:
    import torch

    return bool(torch.profiler.kineto_available())


#: lightning-habana's ``utils.imports`` flags, which its own examples import (``_LIGHTNING_GREATER_EQUAL_2_3_0`` in
#: its language-model example): their values under lightning-hpu, which needs Lightning 2.6+, torch 2.9+ and Intel
#: Gaudi 1.23+.
_IMPORT_FLAGS: dict[str, Target] = {
    "_HABANA_FRAMEWORK_AVAILABLE": lambda: importlib.util.find_spec("habana_frameworks") is not None,
    "_HPU_SYNAPSE_GREATER_EQUAL_1_17_0": lambda: True,
    "_TORCH_LESSER_EQUAL_1_13_1": lambda: False,
    "_TORCH_GREATER_EQUAL_2_0_0": lambda: True,
    "_TORCH_LESSER_2_3_0": lambda: False,
    "_LIGHTNING_GREATER_EQUAL_2_0_0": lambda: True,
    "_LIGHTNING_GREATER_EQUAL_2_3_0": lambda: True,
    "_TORCHVISION_AVAILABLE": lambda: importlib.util.find_spec("torchvision") is not None,
    "_KINETO_AVAILABLE": _kineto_available,
}


def _pick(table: dict[str, Target], names: Sequence[str]) -> dict[str, Target]:
    return {name: table[name] for name in names}


_PYTORCH_STRATEGIES = ["HPUDDPStrategy", "HPUParallelStrategy", "SingleHPUStrategy", "HPUDeepSpeedStrategy"]
_PYTORCH_PLUGINS = ["HPUPrecisionPlugin", "HPUCheckpointIO", "HPUDeepSpeedPrecisionPlugin", "HPUFSDPPrecision"]

#: Every module of lightning-habana 1.7 (``lightning_habana.`` replaced by ``lightning_hpu.``) that is not a module
#: of this package, and the names it exported.
MODULES: dict[str, dict[str, Target]] = {
    "lightning_hpu.pytorch": _PYTORCH,
    "lightning_hpu.pytorch.accelerator": _pick(_PYTORCH, ["HPUAccelerator"]),
    "lightning_hpu.pytorch.strategies": _pick(_PYTORCH, [*_PYTORCH_STRATEGIES, "HPUFSDPStrategy"]),
    "lightning_hpu.pytorch.strategies.ddp": _pick(_PYTORCH, ["HPUDDPStrategy"]),
    "lightning_hpu.pytorch.strategies.parallel": _pick(_PYTORCH, ["HPUParallelStrategy"]),
    "lightning_hpu.pytorch.strategies.single": _pick(_PYTORCH, ["SingleHPUStrategy"]),
    "lightning_hpu.pytorch.strategies.deepspeed": _pick(_PYTORCH, ["HPUDeepSpeedStrategy"]),
    "lightning_hpu.pytorch.strategies.fsdp": _pick(_PYTORCH, ["HPUFSDPStrategy"]),
    "lightning_hpu.pytorch.plugins": _pick(_PYTORCH, _PYTORCH_PLUGINS),
    "lightning_hpu.pytorch.plugins.precision": _pick(_PYTORCH, ["HPUPrecisionPlugin"]),
    "lightning_hpu.pytorch.plugins.deepspeed_precision": _pick(_PYTORCH, ["HPUDeepSpeedPrecisionPlugin"]),
    "lightning_hpu.pytorch.plugins.fsdp_precision": _pick(_PYTORCH, ["HPUFSDPPrecision", "HPUPrecisionPlugin"]),
    "lightning_hpu.pytorch.plugins.io_plugin": _pick(_PYTORCH, ["HPUCheckpointIO"]),
    "lightning_hpu.pytorch.plugins.quant_config": {},
    "lightning_hpu.pytorch.profiler": _pick(_PYTORCH, ["HPUProfiler"]),
    "lightning_hpu.pytorch.profiler.profiler": _pick(_PYTORCH, ["HPUProfiler"]),
    "lightning_hpu.pytorch.datamodule": {},
    "lightning_hpu.pytorch.datamodule.datamodule": {},
    "lightning_hpu.pytorch.datamodule.utils": {},
    "lightning_hpu.pytorch.datamodule.dataloaders": {},
    "lightning_hpu.pytorch.datamodule.dataloaders.resnet_media_pipe": {},
    "lightning_hpu.fabric.strategies.ddp": _pick(_FABRIC, ["HPUDDPStrategy"]),
    "lightning_hpu.fabric.plugins.io_plugin": _pick(_FABRIC, ["HPUCheckpointIO"]),
    "lightning_hpu.utils": {},
    "lightning_hpu.utils.resources": _RESOURCES,
    "lightning_hpu.utils.imports": _IMPORT_FLAGS,
    "lightning_hpu.utils.hpu_distributed": {
        "supported_reduce_ops": "lightning_hpu.distributed.collectives:HCCL_OPS_BY_NAME",
    },
}

#: lightning-habana's names of the ``lightning_habana.fabric`` package (this package's ``lightning_hpu.fabric``).
FABRIC_PACKAGE_NAMES = _FABRIC

#: lightning-habana's data packages, served by the package of this one holding the same files.
DATA_PACKAGES = {"lightning_hpu.pytorch.plugins.quant_config.fp8": "lightning_hpu.fp8.configs"}

#: Names lightning-habana exported that are not carried over, and what to do instead (that page's table).
NOT_CARRIED_OVER = {
    "HPUDataModule": "it fed Habana's media pipe for one model family; use a torch DataLoader",
    "get_hpu_synapse_version": "`hl-smi -v` prints the Synapse version",
    "modify_fp8_json": "pass config= or dump_stats_path= to HPUFp8Inference, or a config to fp8_measure",
}


def resolve(target: Target) -> Any:
    """The value a table entry names."""
    if callable(target):
        return target()
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


def module_getattr(module_name: str, table: dict[str, Target]) -> Callable[[str], Any]:
    """A module ``__getattr__`` serving ``table``; a name not carried over raises ImportError with the reason."""

    def lookup(name: str) -> Any:
        if name in table:
            return resolve(table[name])
        if name in NOT_CARRIED_OVER:
            raise ImportError(
                f"lightning-habana's {name} is not carried over to lightning-hpu ({module_name}): "
                f"{NOT_CARRIED_OVER[name]} (docs/guide/coming-from-lightning-habana.md)."
            )
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")

    return lookup


def names_of(module_name: str) -> Callable[[str], Any]:
    """The ``__getattr__`` of a real module that lightning-habana also had (``lightning_hpu.pytorch``,
    ``lightning_hpu.pytorch.strategies``, ...): its own names first, then lightning-habana's of that path."""
    return module_getattr(module_name, MODULES.get(module_name, {}))


def data_package_spec(fullname: str, package: str) -> importlib.machinery.ModuleSpec | None:
    """A spec for ``fullname`` that loads the data package ``package`` (its files, for ``importlib.resources``)."""
    real = importlib.util.find_spec(package)
    if real is None:
        return None
    spec = importlib.machinery.ModuleSpec(fullname, real.loader, origin=real.origin, is_package=True)
    spec.submodule_search_locations = real.submodule_search_locations
    spec.has_location = real.has_location
    return spec


class HabanaPathFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves :data:`MODULES` and :data:`DATA_PACKAGES`; behind every real finder, so real modules win."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname in DATA_PACKAGES:
            return data_package_spec(fullname, DATA_PACKAGES[fullname])
        if fullname in MODULES:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None  # the default module object

    def exec_module(self, module: types.ModuleType) -> None:
        table = MODULES[module.__name__]
        module.__doc__ = f"lightning-habana's {module.__name__.replace('lightning_hpu', 'lightning_habana', 1)}."
        module.__all__ = list(table)  # type: ignore[attr-defined]
        module.__getattr__ = module_getattr(module.__name__, table)  # type: ignore[method-assign]


def install() -> None:
    """Put the finder behind the real ones on ``sys.meta_path`` (once)."""
    if not any(isinstance(finder, HabanaPathFinder) for finder in sys.meta_path):
        sys.meta_path.append(HabanaPathFinder())
