"""Old module paths, still imported: lightning-hpu 0.1.0's and lightning-habana's, served by one finder.

The tables are data, in :mod:`lightning_hpu.support.old_paths_tables`; this module serves them:

* **lightning-hpu 0.1.0** kept the Trainer's classes at the top of the package (``lightning_hpu.strategies``,
  ``lightning_hpu.plugins``, ``lightning_hpu.hpu_graphs.HPUGraphs``, ...); since ``lightning_hpu.pytorch`` stands beside
  ``lightning_hpu.fabric`` they live elsewhere. As Lightning's graveyard does for its moved names, the old paths keep
  working for now: importing a module that moved (``MOVED_MODULES``) warns with a ``DeprecationWarning`` naming the
  module to import instead, and its names are that module's; a name that moved out of a package that is still there
  (``MOVED_NAMES``, ``HPUGraphs`` of ``lightning_hpu.hpu_graphs``) warns when read (the package's ``__getattr__`` is
  :func:`moved_names_of`) and is the object of its new path.
* **lightning-habana 1.7**'s users only rename the package in imports: ``from lightning_habana.pytorch.strategies.
  deepspeed import HPUDeepSpeedStrategy`` becomes ``from lightning_hpu.pytorch.strategies.deepspeed import ...``, and
  so on for every module of lightning-habana (``HABANA_MODULES``). These modules hold no code of their own: each name
  resolves, when first read, to its target, and a name that was not carried over fails its import with one sentence
  saying what to use instead. A real module of this package at such a path (``lightning_hpu.pytorch``,
  ``lightning_hpu.fabric.strategies.single``, ...) serves lightning-habana's names of that path through
  :func:`names_of`.

The finder sits behind every real one on ``sys.meta_path``, so a module that exists as a file always wins. Targets
are looked up by name when first read, so this module stays below the Trainer layer.
``tests/data/lightning_hpu_0_1_0_modules.txt`` and ``lightning_habana_1_7_modules.txt`` list the old modules, which the
tests walk.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from lightning_hpu.support.old_paths_tables import (
    HABANA_DATA_PACKAGES,
    HABANA_FABRIC_PACKAGE,
    HABANA_MODULES,
    HABANA_NOT_CARRIED_OVER,
    MOVED_MODULES,
    MOVED_NAMES,
)

__all__ = [
    "HABANA_DATA_PACKAGES",
    "HABANA_FABRIC_PACKAGE",
    "HABANA_MODULES",
    "HABANA_NOT_CARRIED_OVER",
    "MOVED_MODULES",
    "MOVED_NAMES",
    "OldPathFinder",
    "data_package_spec",
    "install",
    "module_getattr",
    "moved_names_of",
    "names_of",
    "resolve",
]

#: A table's target (see :mod:`lightning_hpu.support.old_paths_tables`); callers outside the tables (the peer suite's
#: renaming layer) may also pass a function computing the value.
Target = str | bool | Callable[[], Any]


def resolve(target: Target) -> Any:
    """The value ``target`` names."""
    if isinstance(target, bool):
        return target
    if callable(target):
        return target()
    module, _, path = target.partition(":")
    call = path.endswith("()")
    value: Any = importlib.import_module(module)
    for attribute in path.removesuffix("()").split("."):
        value = getattr(value, attribute)
    return value() if call else value


def _warn_moved(old: str, new: str) -> None:
    """0.1.0's deprecation, attributed to the line of the program that imported or read ``old`` (``warnings`` skips
    the import machinery's frames between)."""
    warnings.warn(
        f"{old} is lightning-hpu 0.1.0's path: use {new} instead (the old path will be removed).",
        DeprecationWarning,
        stacklevel=3,
    )


def moved_names_of(package: str) -> Callable[[str], Any]:
    """The ``__getattr__`` of a package of 0.1.0 that is still there: its moved names (``MOVED_NAMES``)."""
    table = MOVED_NAMES.get(package, {})

    def lookup(name: str) -> Any:
        if name not in table:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = table[name].partition(":")
        _warn_moved(f"{package}.{name}", f"`from {module} import {attribute}`")
        return resolve(table[name])

    return lookup


def module_getattr(module_name: str, table: dict[str, Any]) -> Callable[[str], Any]:
    """A module ``__getattr__`` serving lightning-habana's ``table``; a name not carried over raises ImportError with
    the reason."""

    def lookup(name: str) -> Any:
        if name in table:
            return resolve(table[name])
        if name in HABANA_NOT_CARRIED_OVER:
            raise ImportError(
                f"lightning-habana's {name} is not carried over to lightning-hpu ({module_name}): "
                f"{HABANA_NOT_CARRIED_OVER[name]} (docs/guide/coming-from-lightning-habana.md)."
            )
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")

    return lookup


def names_of(module_name: str) -> Callable[[str], Any]:
    """The ``__getattr__`` of a real module that lightning-habana also had (``lightning_hpu.pytorch``,
    ``lightning_hpu.pytorch.strategies``, ...): its own names first, then lightning-habana's of that path."""
    return module_getattr(module_name, HABANA_MODULES.get(module_name, {}))


def _forwarding(new: str) -> Callable[[str], Any]:
    """The ``__getattr__`` of a module of 0.1.0 that moved: the names of module ``new``."""

    def lookup(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(importlib.import_module(new), name)

    return lookup


def data_package_spec(fullname: str, package: str) -> importlib.machinery.ModuleSpec | None:
    """A spec for ``fullname`` that loads the data package ``package`` (its files, for ``importlib.resources``)."""
    real = importlib.util.find_spec(package)
    if real is None:
        return None
    spec = importlib.machinery.ModuleSpec(fullname, real.loader, origin=real.origin, is_package=True)
    spec.submodule_search_locations = real.submodule_search_locations
    spec.has_location = real.has_location
    return spec


class OldPathFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves every old path of the tables; behind every real finder, so a module that exists as a file wins."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname in HABANA_DATA_PACKAGES:
            return data_package_spec(fullname, HABANA_DATA_PACKAGES[fullname])
        if fullname in HABANA_MODULES or fullname in MOVED_MODULES:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None  # the default module object

    def exec_module(self, module: types.ModuleType) -> None:
        name = module.__name__
        if name in HABANA_MODULES:
            table = HABANA_MODULES[name]
            module.__doc__ = f"lightning-habana's {name.replace('lightning_hpu', 'lightning_habana', 1)}."
            module.__all__ = list(table)  # type: ignore[attr-defined]
            module.__getattr__ = module_getattr(name, table)  # type: ignore[method-assign]
            return
        new = MOVED_MODULES[name]
        module.__doc__ = f"lightning-hpu 0.1.0's {name}, now {new}."
        module.__getattr__ = _forwarding(new)  # type: ignore[method-assign]
        _warn_moved(name, new)


def install() -> None:
    """Put the finder behind the real ones on ``sys.meta_path`` (once)."""
    if not any(isinstance(finder, OldPathFinder) for finder in sys.meta_path):
        sys.meta_path.append(OldPathFinder())
