"""Lightning learns ``accelerator="hpu"`` the moment it is imported, in every process where lightning-hpu is installed.

Up to Lightning 2.5, Lightning imported its HPU plugin itself; 2.6 no longer does. ``lightning_hpu.pth``, installed
into site-packages with the distribution (``setup.py``), puts a watcher first on ``sys.meta_path`` at every Python
start, unless ``LIGHTNING_HPU_AUTOLOAD=0`` (in the style of torch's ``TORCH_DEVICE_BACKEND_AUTOLOAD``). The watcher
is a class the ``.pth`` line builds itself, so that a process that never imports Lightning imports nothing for it
(``benchmarks/startup_cost.py``); it lets every import through untouched except the three top-level packages of
Lightning (``lightning``, ``pytorch_lightning``, ``lightning_fabric``), for which it imports this module and asks
:func:`find_spec`. Once such a package has run, it is handed to :mod:`lightning_hpu.integration.autoload`, which
registers the HPU names with it.

This module imports nothing itself, and it never makes an import of Lightning fail: a broken or partial install of
lightning-hpu warns once and leaves Lightning as it was.
"""

import sys

# Nothing is imported here, not even ``__future__`` (half a millisecond): the annotations that name types are strings.
TYPE_CHECKING = False
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
#: The ``__name__`` of the watcher class ``lightning_hpu.pth`` puts on ``sys.meta_path``.
WATCHER_NAME = "LightningHPUWatcher"


class _RegisteringLoader:
    """The loader of a watched package: runs it with its own loader, then registers the HPU names with it."""

    def __init__(self, loader: "Any") -> None:
        self.loader = loader

    def __getattr__(self, name: str) -> "Any":
        return getattr(self.loader, name)

    def create_module(self, spec: "ModuleSpec") -> "ModuleType | None":
        return self.loader.create_module(spec)

    def exec_module(self, module: "ModuleType") -> None:
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


def find_spec(name: str, path: "Any" = None, target: "Any" = None) -> "ModuleSpec | None":
    """The spec of watched package ``name`` (:data:`WATCHED`) as the other finders give it, its loader wrapped so that
    the HPU names are registered once the package has run."""
    for finder in sys.meta_path:
        if getattr(finder, "__name__", None) == WATCHER_NAME or not hasattr(finder, "find_spec"):
            continue
        spec = finder.find_spec(name, path, target)
        if spec is not None:
            if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                spec.loader = _RegisteringLoader(spec.loader)  # type: ignore[assignment]  # duck-typed
            return spec
    return None
