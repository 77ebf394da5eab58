"""Lightning learns ``accelerator="hpu"`` the moment it is imported, in every process where lightning-hpu is installed.

Up to Lightning 2.5, Lightning imported its HPU plugin itself; 2.6 no longer does. Every Lightning imports torch
first, and torch loads out-of-tree device backends through its ``torch.backends`` entry points while it is imported
(``TORCH_DEVICE_BACKEND_AUTOLOAD``): lightning-hpu's entry point is :func:`install`, so a Python process that never
imports torch pays nothing, and one that imports torch pays for this small module (``benchmarks/startup_cost.py``).

:func:`install` puts :class:`LightningWatcher` first on ``sys.meta_path`` (unless ``LIGHTNING_HPU_AUTOLOAD=0``). The
watcher lets every import through untouched except Lightning's packages: once ``lightning``, ``pytorch_lightning`` or
``lightning_fabric`` has run, the HPU names are registered with it (:func:`registered`): with ``lightning`` by
``import lightning_hpu``, with the standalone packages by :func:`lightning_hpu.standalone.register`. torch is often
first imported *while* one of them runs (``import lightning`` imports torch): then the registration follows the
import each of them makes last, once all its names are bound (``<package>._graveyard``, "this import needs to go
last" in Lightning's own words), or happens at once for a package that has already run.

It never makes an import of Lightning (or of torch) fail: a registration that fails (a broken or partial install)
warns once, saying what failed, and leaves Lightning as it was. A bad value of a ``LIGHTNING_HPU_*`` variable does not
stop the registration: it is refused, naming the variable, where the program asks for an HPU.
"""

from __future__ import annotations

import os
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec
    from types import ModuleType

#: ``LIGHTNING_HPU_AUTOLOAD=0`` keeps Lightning as it is until the program imports ``lightning_hpu`` itself.
SWITCH_ENV = "LIGHTNING_HPU_AUTOLOAD"
#: The values of :data:`SWITCH_ENV` that turn registration off, and those that keep it on (unset is on).
OFF = ("0", "false", "no", "off")
ON = ("", "1", "true", "yes", "on")
#: Lightning's top-level packages.
WATCHED = ("lightning", "lightning_fabric", "pytorch_lightning")
#: The import each package makes last, when its names are bound: the package it completes.
LAST_IMPORTS = {
    "lightning.pytorch._graveyard": "lightning",
    "lightning_fabric._graveyard": "lightning_fabric",
    "pytorch_lightning._graveyard": "pytorch_lightning",
}

#: Other Lightning-AI libraries with a device choice of their own (LitServe, LitGPT's Python API): once the module
#: named has run, :func:`lightning_hpu.serving.register` teaches it the HPU.
SERVING = ("litserve", "litgpt.api")

_done: set[str] = set()
_failed = False
#: Serving libraries whose registration waits for a Lightning package being imported to be registered: registering
#: them imports lightning_hpu, and with it Lightning, which must not be imported half-run (``import litserve, litgpt``).
_after_lightning: set[str] = set()
#: Packages whose registration waits for a module of ``lightning_hpu.standalone`` that imported them to finish.
_deferred: set[str] = set()
STANDALONE_PREFIX = "lightning_hpu.standalone."


def switched_off() -> bool:
    """Whether ``LIGHTNING_HPU_AUTOLOAD`` turns automatic registration off (:data:`OFF`); any other value than those
    and :data:`ON` warns that it is read as on."""
    value = os.environ.get(SWITCH_ENV, "1").strip().lower()
    if value not in OFF + ON:
        import warnings

        warnings.warn(
            f"{SWITCH_ENV}={os.environ[SWITCH_ENV]!r} is neither on nor off: lightning-hpu registers with Lightning as"
            f" with {SWITCH_ENV}=1; set it to 0 to turn registration off, or to 1.",
            RuntimeWarning,
            stacklevel=2,
        )
    return value in OFF


def registered(name: str, finishing: str = "") -> None:
    """Register the HPU names with Lightning package ``name`` (once), whose names are bound; warn once if it fails.
    ``finishing``: the module of ``lightning_hpu.standalone`` whose run has just ended (:func:`standalone_ran`)."""
    if _failed or name in _done:
        return
    if name in SERVING and _lightning_importing():
        _after_lightning.add(name)
        return
    _done.add(name)
    _register_once(name, finishing)
    if _after_lightning and not _lightning_importing():
        waiting = sorted(_after_lightning)
        _after_lightning.clear()
        for serving in waiting:
            registered(serving)


def _lightning_importing() -> bool:
    """Whether a Lightning package is being imported and has not been registered with yet."""
    return any(name in sys.modules and not _has_run(name) and name not in _done for name in WATCHED)


def _register_once(name: str, finishing: str) -> None:
    """:func:`registered`'s work for package ``name``, marked done: a failure warns once and leaves it as it was."""
    global _failed
    if name == "lightning" and "lightning_hpu" in sys.modules:
        return  # lightning_hpu, imported already or importing Lightning right now, registers itself
    try:
        _register_with(name, finishing)
    except Exception as error:  # never let lightning-hpu break `import lightning`
        _failed = name not in SERVING  # a serving library that moved leaves Lightning's registration to go on
        import warnings

        warnings.warn(
            f"lightning-hpu is installed but could not register accelerator='hpu' with {name}, because"
            f" {type(error).__name__}: {error} ({name} works as without it; set {SWITCH_ENV}=0 to stop trying).",
            RuntimeWarning,
            stacklevel=2,
        )


def _register_with(name: str, finishing: str = "") -> None:
    """``lightning``: ``import lightning_hpu``, whose import registers with ``lightning.pytorch`` and
    ``lightning.fabric``. ``pytorch_lightning``: :func:`lightning_hpu.standalone.register`, the same source built
    against the standalone packages. ``lightning_fabric`` on its own (a Fabric program) registers once
    ``pytorch_lightning`` has run too, when it is installed: the HPU twins of Lightning's strategy objects rebuild
    Trainer and Fabric strategies alike."""
    import importlib
    import importlib.util

    if name in SERVING:
        importlib.import_module("lightning_hpu.serving").register(name)
    elif name == "lightning":
        importlib.import_module("lightning_hpu")
    elif name == "lightning_fabric":
        if "pytorch_lightning" in sys.modules:  # pytorch_lightning is importing it: registered once it has run
            return
        if importlib.util.find_spec("pytorch_lightning") is None:
            raise ImportError(
                "lightning-hpu registers with the standalone lightning_fabric together with pytorch_lightning, which"
                " is not installed: `pip install pytorch-lightning`, or import Fabric from lightning"
            )
        importlib.import_module("pytorch_lightning")  # its own registration follows once it has run
    elif _standalone_running(finishing):
        # A module of lightning_hpu.standalone imported pytorch_lightning and has not finished: registering now would
        # import it half-run. Its loader calls standalone_ran() once it has.
        _deferred.add(name)
    else:
        importlib.import_module("lightning_hpu.standalone").register()


def _standalone_running(finishing: str = "") -> bool:
    """Whether a module of ``lightning_hpu.standalone`` other than ``finishing`` is still running its source."""
    return any(
        name.startswith(STANDALONE_PREFIX) and name != finishing and not _has_run(name) for name in list(sys.modules)
    )


def standalone_ran(name: str) -> None:
    """Called by ``lightning_hpu.standalone``'s loader when module ``name`` has run: once no other is running, the
    registration it deferred (:func:`_register_with`) happens."""
    if _deferred and not _standalone_running(name):
        waiting = sorted(_deferred)
        _deferred.clear()
        for package in waiting:
            _done.discard(package)
            registered(package, finishing=name)


class _RegisteringLoader:
    """The loader of a watched module: runs it with its own loader, then registers with the package it completes."""

    def __init__(self, loader: Any, package: str) -> None:
        self.loader = loader
        self.package = package

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loader, name)

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        registered(self.package)


class LightningWatcher:
    """A meta path finder that finds nothing itself: it wraps the loaders of Lightning's packages and of the imports
    they make last (:data:`WATCHED`, :data:`LAST_IMPORTS`)."""

    @classmethod
    def find_spec(cls, name: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        package = name if name in WATCHED or name in SERVING else LAST_IMPORTS.get(name)
        if package is None or package in _done:
            return None
        for finder in sys.meta_path:
            if finder is cls or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _RegisteringLoader(spec.loader, package)  # type: ignore[assignment]  # duck-typed
                return spec
        return None


def _has_run(name: str) -> bool:
    module = sys.modules.get(name)
    return module is not None and not getattr(getattr(module, "__spec__", None), "_initializing", False)


def _register_when_bound(name: str) -> None:
    """Register with :data:`SERVING` module ``name``, which is running now (torch was first imported inside it, as
    ``litgpt.api`` imports Lightning first), once the import binds it on its package: the moment it has run."""
    package = sys.modules.get(name.rpartition(".")[0])
    if package is not None and type(package) is types.ModuleType:
        package.__class__ = _BindingPackage


class _BindingPackage(types.ModuleType):
    """A package whose :data:`SERVING` submodule is running (:func:`_register_when_bound`); a plain module again once
    the import has bound that submodule on it."""

    def __setattr__(self, attribute: str, value: Any) -> None:
        super().__setattr__(attribute, value)
        name = f"{self.__name__}.{attribute}"
        if name in SERVING and _has_run(name):
            self.__class__ = types.ModuleType
            registered(name)


def install() -> None:
    """torch's ``torch.backends`` entry point: put :class:`LightningWatcher` first on ``sys.meta_path`` (once), unless
    switched off, and register with the Lightning packages that have already run. Never raises."""
    try:
        if switched_off() or LightningWatcher in sys.meta_path:
            return
        sys.meta_path.insert(0, LightningWatcher)  # a finder class, as importlib's own
        for name in WATCHED + SERVING:
            if _has_run(name):
                registered(name)
            elif name in SERVING and name in sys.modules:
                _register_when_bound(name)
    except Exception:  # torch turns an entry point's error into a failed `import torch`
        pass
