"""A pytest plugin serving ``lightning_habana.*`` imports from lightning-hpu: the peer suite's renaming layer.

It renames the package and nothing else: every name of ``lightning_habana.X`` is read from ``lightning_hpu.X``,
which lightning-hpu provides for every module path of lightning-habana 1.7
(:mod:`lightning_hpu.support.old_paths`), as a user who replaced ``lightning_habana`` with
``lightning_hpu`` in their imports gets. The only additions are two private names of lightning-habana that its tests
import (a DeepSpeed availability flag and a type), which no user code should need. Loaded with
``pytest -p lightning_habana_alias`` before the suite's conftest imports ``lightning_habana``.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types
from typing import Any

os.environ.setdefault("LIGHTNING_HPU_BACKEND", "cpu")

OLD, NEW = "lightning_habana", "lightning_hpu"

#: lightning-habana's private names that its tests import, by module (renamed), and their values here (targets as
#: in :mod:`lightning_hpu.support.old_paths`: ``"module:attribute"``, or a function computing the value).
PRIVATE: dict[str, dict[str, Any]] = {
    "lightning_hpu.pytorch.strategies.deepspeed": {
        "_HPU_DEEPSPEED_AVAILABLE": lambda: importlib.util.find_spec("deepspeed") is not None,
    },
    "lightning_hpu.pytorch.plugins.precision": {
        "_PRECISION_INPUT": "lightning_hpu.precision.hpu_precision:HPUPrecisionInput",
    },
}


def _renamed(fullname: str) -> str:
    return NEW + fullname[len(OLD) :]


class _RenamingFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``lightning_habana.X`` is a view of ``lightning_hpu.X``: every name read from it is read from that module."""

    @staticmethod
    def find_spec(fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if not (fullname == OLD or fullname.startswith(OLD + ".")):
            return None
        from lightning_hpu.support.old_paths import HABANA_DATA_PACKAGES, data_package_spec

        if _renamed(fullname) in HABANA_DATA_PACKAGES:  # files are read from it: the package's own files
            return data_package_spec(fullname, HABANA_DATA_PACKAGES[_renamed(fullname)])
        return importlib.machinery.ModuleSpec(fullname, _RenamingFinder, is_package=True)

    @staticmethod
    def create_module(spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None

    @staticmethod
    def exec_module(module: types.ModuleType) -> None:
        name = _renamed(module.__name__)
        private = PRIVATE.get(name, {})
        real = importlib.import_module(name)

        def lookup(attribute: str) -> Any:
            if attribute in private:
                from lightning_hpu.support.old_paths import resolve

                return resolve(private[attribute])
            if real is None:
                raise AttributeError(f"module {module.__name__!r} has no attribute {attribute!r}")
            return getattr(real, attribute)

        module.__getattr__ = lookup  # type: ignore[method-assign]
        if real is not None and hasattr(real, "__all__"):
            module.__all__ = list(real.__all__)  # type: ignore[attr-defined]


if not any(isinstance(finder, _RenamingFinder) for finder in sys.meta_path):
    sys.meta_path.insert(0, _RenamingFinder())
