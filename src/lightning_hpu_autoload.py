"""Lightning learns ``accelerator="hpu"`` the moment it is imported, in every process where lightning-hpu is installed.

Up to Lightning 2.5, Lightning imported its HPU plugin itself; 2.6 no longer does. ``lightning_hpu.pth``, installed
into site-packages with the distribution, calls :func:`install` at every Python start (unless
``LIGHTNING_HPU_AUTOLOAD=0``, in the style of torch's ``TORCH_DEVICE_BACKEND_AUTOLOAD``). It puts
:class:`LightningWatcher` first on ``sys.meta_path``; the watcher lets every import through untouched except the three
top-level packages of Lightning (``lightning``, ``pytorch_lightning``, ``lightning_fabric``): once one of them has
run, it hands it to :mod:`lightning_hpu.integration.autoload`, which registers the HPU names with it. A process that
never imports Lightning pays for this module and one dictionary lookup per import, nothing more.

This module runs before anything else at start-up: it imports nothing, and it never makes an import of Lightning
fail: a broken or partial install of lightning-hpu warns once and leaves Lightning as it was.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # ``typing`` would cost more than the rest of this module: nothing is imported here
if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec
    from types import ModuleType
    from typing import Any

#: ``LIGHTNING_HPU_AUTOLOAD=0`` keeps Lightning as it is until the program imports ``lightning_hpu`` itself.
SWITCH_ENV = "LIGHTNING_HPU_AUTOLOAD"
#: Lightning's top-level packages, each with the function of :mod:`lightning_hpu.integration.autoload` that is handed
#: the package once it has run.
WATCHED = {
    "lightning": "lightning_loaded",
    "lightning_fabric": "standalone_loaded",
    "pytorch_lightning": "standalone_loaded",
}
HOOKS = "lightning_hpu.integration.autoload"


def switched_off() -> bool:
    """Whether ``LIGHTNING_HPU_AUTOLOAD`` turns automatic registration off (``0``, ``false``, ``no``, ``off``)."""
    return os.environ.get(SWITCH_ENV, "1").strip().lower() in ("0", "false", "no", "off")


class _RegisteringLoader:
    """The loader of a watched package: runs it with its own loader, then registers the HPU names with it."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loader, name)

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        registered(module.__name__)


_failed = False


def registered(name: str) -> None:
    """Register the HPU names with Lightning package ``name``, which has just run; warn once if that fails."""
    global _failed
    if _failed or (name == "lightning" and "lightning_hpu" in sys.modules):
        return  # lightning_hpu, imported already or importing Lightning right now, registers itself
    try:
        import importlib

        getattr(importlib.import_module(HOOKS), WATCHED[name])(name)
    except Exception as error:  # never let lightning-hpu break `import lightning`
        _failed = True
        import warnings

        warnings.warn(
            f"lightning-hpu is installed but could not register accelerator='hpu' with {name} ({error!r}); {name}"
            f" works as without it. Reinstall lightning-hpu, or set {SWITCH_ENV}=0 to stop trying.",
            RuntimeWarning,
            stacklevel=2,
        )


class LightningWatcher:
    """A meta path finder that finds nothing itself: it wraps the loader of the watched packages (:data:`WATCHED`)."""

    @classmethod
    def find_spec(cls, name: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        if name not in WATCHED:
            return None
        for finder in sys.meta_path:
            if finder is cls or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _RegisteringLoader(spec.loader)  # type: ignore[assignment]  # duck-typed
                return spec
        return None


def install() -> None:
    """Put :class:`LightningWatcher` first on ``sys.meta_path`` (once), unless switched off; packages of Lightning
    imported before (by another ``.pth`` file) are registered with at once."""
    if switched_off() or LightningWatcher in sys.meta_path:
        return
    sys.meta_path.insert(0, LightningWatcher)
    for name in WATCHED:
        if name in sys.modules:
            registered(name)
