"""Import hook that serves ``habana_frameworks`` from the CPU stand-in, so scripts written for a Gaudi run unchanged.

``lightning_hpu_emulation.pth`` (installed into site-packages with the distribution) calls :func:`install_if_requested`
at every Python start, and so does the stand-in's ``torch.backends`` entry point when torch is imported
(:mod:`gaudi_standin.autoload`). Only when ``LIGHTNING_HPU_BACKEND=cpu`` chose the stand-in and no real
``habana_frameworks`` is findable, it appends :class:`EmulationFinder` to ``sys.meta_path``; the finder maps
``habana_frameworks`` and the submodules listed in :data:`MODULES` onto the modules of ``gaudi_standin.bridge``, and
``torch.hpu`` onto the emulated ``habana_frameworks.torch.hpu``: torch imports ``torch.hpu`` the first time a tensor
goes to ``"hpu"``, which makes the stand-in's device real then, as the bridge's automatic loading does on a Gaudi.
Once TorchDynamo's backend registry has loaded, it registers ``hpu_backend`` there, and once DeepSpeed's accelerator
module has loaded, it makes DeepSpeed's HPU accelerator the stand-in's (DeepSpeed's own calls the bridge's device
kernels, which the stand-in lacks): :class:`AfterImportHook`. On a CUDA build of torch it also puts
:class:`gaudi_standin.early_load.TorchCFinder` first, which loads the stand-in's device library before ``torch._C``
(or CUDA would be torch's accelerator).

This module runs before anything else at start-up: it imports only the standard library, and nothing at all
happens unless the stand-in was chosen.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import os
import sys

TYPE_CHECKING = False  # ``typing`` alone would double the start-up cost: nothing more is imported here
if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import ModuleType
    from typing import Any

BACKEND_ENV = "LIGHTNING_HPU_BACKEND"
ROOT = "habana_frameworks"
EMULATION_PACKAGE = "gaudi_standin.bridge"
#: The ``origin`` of every emulated module's spec: how a program tells the stand-in's bridge from a real one without
#: importing either (``importlib.util.find_spec("habana_frameworks").origin``).
EMULATED_ORIGIN = "habana_frameworks emulated by the lightning-hpu cpu stand-in"
#: Modules of other packages the stand-in completes once they have loaded, as the bridge does when it loads: each
#: mapped to the stand-in's function (``module:function``) that is handed the loaded module. DeepSpeed's accelerator
#: choice gets the stand-in's HPU accelerator; TorchDynamo's backend registry gets ``hpu_backend``.
AFTER_IMPORT: dict[str, str] = {
    "deepspeed.accelerator.real_accelerator": "gaudi_standin.deepspeed_accelerator:choose_on_first_use",
    "torch._dynamo.backends.registry": "gaudi_standin.compile_backend:register_with",
}

#: Each emulated bridge module, mapped to the emulation module that serves it (``None``: a package that only
#: holds submodules, as in the bridge).
MODULES: dict[str, str | None] = {
    "habana_frameworks": None,
    "habana_frameworks.torch": "torch_package",
    "habana_frameworks.torch.core": "core",
    "habana_frameworks.torch.hpu": "hpu",
    "habana_frameworks.torch.hpu._utils": "device_index",
    "habana_frameworks.torch.hpu.events": "events",
    "habana_frameworks.torch.hpu.streams": "streams",
    "habana_frameworks.torch.hpu.graphs": "graphs",
    "habana_frameworks.torch.hpu.metrics": "metrics",
    "habana_frameworks.torch.hpu.random": "rng",
    "habana_frameworks.torch.hpex": None,
    "habana_frameworks.torch.hpex.optimizers": "optimizers",
    "habana_frameworks.torch.hpex.normalization": "normalization",
    "habana_frameworks.torch.hpex.movingavrg": "movingavrg",
    "habana_frameworks.torch.hpex.kernels": "kernels",
    "habana_frameworks.torch.hpex.kernels.Fp8Ops": "fp8_ops",
    "habana_frameworks.torch.hpex.optimizers.distributed": "optimizers_distributed",
    "habana_frameworks.torch.dynamo": None,
    "habana_frameworks.torch.dynamo.compile_backend": "dynamo_backend",
    "habana_frameworks.torch.dynamo.compile_backend.config": "compile_config",
    "habana_frameworks.torch.dynamo.compile_backend.experimental": "compile_experimental",
    "habana_frameworks.torch.hpex.experimental": None,
    "habana_frameworks.torch.hpex.experimental.transformer_engine": "transformer_engine",
    "habana_frameworks.torch.hpex.experimental.transformer_engine.recipe": "te_recipe",
    "habana_frameworks.torch.hpex.experimental.transformer_engine.fp8": "te_fp8",
    "habana_frameworks.torch.distributed": None,
    "habana_frameworks.torch.distributed.hccl": "hccl",
    "habana_frameworks.torch.utils": None,
    "habana_frameworks.torch.utils.debug": "debug",
    "habana_frameworks.torch.utils.experimental": "experimental",
    "habana_frameworks.torch.utils.experimental.detect_recompilation": "dynamicity",
    "habana_frameworks.torch.utils.library_loader": "library_loader",
}

#: torch's device module for ``hpu``, served by the emulated bridge module as on a Gaudi.
TORCH_DEVICE_MODULE = "torch.hpu"

#: The bridge modules that have submodules.
PACKAGES = frozenset(
    {
        "habana_frameworks",
        "habana_frameworks.torch",
        "habana_frameworks.torch.hpu",
        "habana_frameworks.torch.hpex",
        "habana_frameworks.torch.hpex.kernels",
        "habana_frameworks.torch.hpex.optimizers",
        "habana_frameworks.torch.dynamo",
        "habana_frameworks.torch.dynamo.compile_backend",
        "habana_frameworks.torch.utils.experimental",
        "habana_frameworks.torch.hpex.experimental",
        "habana_frameworks.torch.hpex.experimental.transformer_engine",
        "habana_frameworks.torch.distributed",
        "habana_frameworks.torch.utils",
    }
)

#: What importing a bridge module imports with it: ``habana_frameworks.torch`` loads core, hpu and hccl (the last
#: registers the ``"hccl"`` process-group backend), as the bridge's ``__init__`` does.
IMPORTED_WITH: dict[str, tuple[str, ...]] = {
    "habana_frameworks.torch": (
        "habana_frameworks.torch.core",
        "habana_frameworks.torch.hpu",
        "habana_frameworks.torch.distributed.hccl",
    ),
}


class _EmulationLoader:
    """Loads one bridge module name as its emulation module (the same module object, not a copy).

    A loader by protocol: subclassing ``importlib.abc`` would import ``importlib.resources`` at every start-up.
    """

    def __init__(self, name: str) -> None:
        self.name = name

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        target = MODULES[ROOT + ".torch.hpu" if self.name == TORCH_DEVICE_MODULE else self.name]
        if target is None:
            return None  # an empty package, created by the import system
        return importlib.import_module(f"{EMULATION_PACKAGE}.{target}")

    def exec_module(self, module: ModuleType) -> None:
        for name in IMPORTED_WITH.get(self.name, ()):
            importlib.import_module(name)


class EmulationFinder:
    """Finds the emulated ``habana_frameworks`` modules; it sits last on ``sys.meta_path``, behind every real one."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == TORCH_DEVICE_MODULE:
            loader: Any = _EmulationLoader(fullname)  # a Loader by protocol (see the class)
            return importlib.machinery.ModuleSpec(fullname, loader, origin=EMULATED_ORIGIN)
        if fullname not in MODULES:
            return None
        if fullname != ROOT and not is_emulated(getattr(sys.modules.get(ROOT), "__spec__", None)):
            return None  # a real bridge was imported: its submodules are its own
        emulation: Any = _EmulationLoader(fullname)
        return importlib.machinery.ModuleSpec(
            fullname, emulation, origin=EMULATED_ORIGIN, is_package=fullname in PACKAGES
        )


class _RunAfterLoading:
    """Wraps a module's loader: runs the module as usual, then hands it to the stand-in's function for it."""

    def __init__(self, loader: Any, target: str) -> None:
        self._loader = loader
        self._target = target

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        _complete(module, self._target)


class AfterImportHook:
    """Finds the modules of :data:`AFTER_IMPORT` as every finder would, so that the stand-in can follow their loading.

    It sits first on ``sys.meta_path`` and answers for those modules only.
    """

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        completer = AFTER_IMPORT.get(fullname)
        if completer is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _RunAfterLoading(spec.loader, completer)  # type: ignore[assignment]  # a Loader by protocol
        return spec


def is_emulated(spec: importlib.machinery.ModuleSpec | None) -> bool:
    """Whether ``spec`` (of a module or a found name) belongs to the emulation rather than a real bridge."""
    if spec is None:
        return False
    return isinstance(spec.loader, _EmulationLoader) or (spec.name or "").startswith(EMULATION_PACKAGE + ".")


def real_bridge_findable() -> bool:
    """Whether a real ``habana_frameworks`` lies on ``sys.path`` (then the emulation never installs)."""
    return importlib.machinery.PathFinder.find_spec(ROOT) is not None


def installed() -> bool:
    """Whether the emulation's finder is on ``sys.meta_path``."""
    return any(isinstance(finder, EmulationFinder) for finder in sys.meta_path)


def stand_in_requested() -> bool:
    """Whether ``LIGHTNING_HPU_BACKEND`` chose the CPU stand-in (read without importing the package)."""
    return os.environ.get(BACKEND_ENV, "").strip().lower() == "cpu"


def install_if_requested() -> bool:
    """Install the finder when the stand-in was chosen and there is no real bridge; return whether it is installed."""
    if installed():
        return True
    if not stand_in_requested() or real_bridge_findable():
        return False
    sys.meta_path.append(EmulationFinder())
    sys.meta_path.insert(0, AfterImportHook())
    from gaudi_standin import early_load  # the device library before torch._C, on a CUDA build of torch

    early_load.install()
    for name, completer in AFTER_IMPORT.items():  # loaded before the stand-in was chosen: complete them now
        if name in sys.modules:
            _complete(sys.modules[name], completer)
    return True


def _complete(module: ModuleType, completer: str) -> None:
    owner, function = completer.split(":")
    getattr(importlib.import_module(owner), function)(module)
