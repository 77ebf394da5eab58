"""Import hook that serves ``habana_frameworks`` from the CPU stand-in, so scripts written for a Gaudi run unchanged.

``lightning_hpu_emulation.pth`` (installed into site-packages with the distribution) calls :func:`install_if_requested`
at every Python start, and so does the stand-in's ``torch.backends`` entry point when torch is imported
(:mod:`gaudi_standin.startup.autoload`). Only when ``LIGHTNING_HPU_BACKEND=cpu`` chose the stand-in and no real
``habana_frameworks`` is findable, it puts :class:`EmulationFinder` on ``sys.meta_path``. The finder needs no table:
``gaudi_standin.bridge`` holds the bridge's own module tree, so ``habana_frameworks.X`` is served by the module
``gaudi_standin.bridge.habana_frameworks.X`` where that exists (the same module object, under both names), and
``torch.hpu`` by the emulated ``habana_frameworks.torch.hpu``: torch imports ``torch.hpu`` the first time a tensor goes
to ``"hpu"``, which makes the stand-in's device real then, as the bridge's automatic loading does on a Gaudi.
Once TorchDynamo's backend registry has loaded, it registers ``hpu_backend`` there (and once TorchDynamo has, it keeps
it out of the stand-in's process group), and once DeepSpeed's accelerator
module has loaded, it makes DeepSpeed's HPU accelerator the stand-in's (DeepSpeed's own calls the bridge's device
kernels, which the stand-in lacks): :class:`AfterImportHook`. On a CUDA build of torch it also puts
:class:`gaudi_standin.startup.early_load.TorchCFinder` first, which loads the stand-in's device library before
``torch._C`` (or CUDA would be torch's accelerator).

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
#: choice gets the stand-in's HPU accelerator; TorchDynamo's backend registry gets ``hpu_backend``; TorchDynamo itself
#: is told to leave the stand-in's ``"hccl"`` group alone (it is C++ on a Gaudi, where TorchDynamo cannot see it).
AFTER_IMPORT: dict[str, str] = {
    "deepspeed.accelerator.real_accelerator": "gaudi_standin.deepspeed_hpu.accelerator:choose_on_first_use",
    "torch._dynamo.backends.registry": "gaudi_standin.compiler.hpu_backend:register_with",
    "torch._dynamo": "gaudi_standin.distributed.compiler_opaque:hide_from",
}

#: torch's device module for ``hpu``, served by the emulated bridge module as on a Gaudi.
TORCH_DEVICE_MODULE = "torch.hpu"


def standin_module(name: str) -> str:
    """The stand-in module that serves the bridge module ``name`` (``torch.hpu``: the bridge's ``hpu``)."""
    if name == TORCH_DEVICE_MODULE:
        name = ROOT + ".torch.hpu"
    return f"{EMULATION_PACKAGE}.{name}"


class _EmulationLoader:
    """Loads one bridge module name as the stand-in module of the same path (the same module object, not a copy).

    A loader by protocol: subclassing ``importlib.abc`` would import ``importlib.resources`` at every start-up.
    """

    def __init__(self, name: str) -> None:
        self.name = name

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return importlib.import_module(standin_module(self.name))

    def exec_module(self, module: ModuleType) -> None:
        pass  # the stand-in module ran when it was imported under its own name


class EmulationFinder:
    """Finds the emulated ``habana_frameworks`` modules: ``habana_frameworks`` itself only when no real bridge lies on
    ``sys.path``, its submodules only when it is the emulated one.

    It sits before ``sys.meta_path``'s path finder: the stand-in's packages are real packages, whose ``__path__``
    would otherwise let the path finder load a second copy of a submodule under the bridge's name.
    """

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == ROOT:
            if real_bridge_findable():
                return None
        elif fullname.startswith(ROOT + "."):
            if not is_emulated(getattr(sys.modules.get(ROOT), "__spec__", None)):
                return None  # a real bridge was imported: its submodules are its own
        elif fullname != TORCH_DEVICE_MODULE:
            return None
        found = _standin_spec(standin_module(fullname))
        if found is None:
            return None  # a module the stand-in does not emulate
        loader: Any = _EmulationLoader(fullname)  # a Loader by protocol (see the class)
        return importlib.machinery.ModuleSpec(
            fullname, loader, origin=EMULATED_ORIGIN, is_package=found.submodule_search_locations is not None
        )


def _standin_spec(name: str) -> importlib.machinery.ModuleSpec | None:
    """The spec of the stand-in module ``name`` if it exists, found without running it (its parents are imported)."""
    parent, _, _ = name.rpartition(".")
    search = getattr(importlib.import_module(parent), "__path__", None)
    if search is None:
        return None
    return importlib.machinery.PathFinder.find_spec(name, search)


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
    sys.meta_path[0:0] = [AfterImportHook(), EmulationFinder()]
    from gaudi_standin.startup import early_load  # the device library before torch._C, on a CUDA build of torch

    early_load.install()
    for name, completer in AFTER_IMPORT.items():  # loaded before the stand-in was chosen: complete them now
        if name in sys.modules:
            _complete(sys.modules[name], completer)
    return True


def _complete(module: ModuleType, completer: str) -> None:
    owner, function = completer.split(":")
    getattr(importlib.import_module(owner), function)(module)
