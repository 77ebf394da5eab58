"""lightning-hpu for the standalone ``pytorch_lightning`` and ``lightning_fabric`` packages.

Lightning ships twice: ``lightning`` (``lightning.pytorch``, ``lightning.fabric``) and the standalone
``pytorch_lightning`` and ``lightning_fabric``, each with its own classes and registries. Installed, lightning-hpu
registers ``accelerator="hpu"`` and its names with whichever of them a program imports (both, if it imports both), so
``pytorch_lightning.Trainer(accelerator="hpu")`` needs no import of this package. The classes for the standalone
packages are here, under the names ``lightning_hpu`` exports::

    import pytorch_lightning as pl
    from lightning_hpu.standalone import HPUParallelStrategy

    trainer = pl.Trainer(accelerator="hpu", devices=8, strategy=HPUParallelStrategy(static_graph=True))

and the modules mirror the package's (``lightning_hpu.standalone.pytorch.strategies``,
``lightning_hpu.standalone.fabric.strategies``, ...). They are the package's own source built against the
standalone packages (:mod:`~lightning_hpu.standalone.renaming`), not a copy; names that do not depend on Lightning
(``wrap_in_hpu_graph``, ``get_backend``, ...) are the very objects of ``lightning_hpu``.

Imports (the layering test checks this paragraph): no Lightning package by name; of this package, ``lightning_hpu``
(the package itself, whose modules it serves with Lightning's names renamed).
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from lightning_hpu.standalone import renaming

renaming.install()


def register() -> None:
    """Register the HPU accelerator, strategies, precision and profiler names with ``pytorch_lightning`` and
    ``lightning_fabric``, and teach their connectors HPU (idempotent; done when either is imported)."""
    importlib.import_module(f"{renaming.STANDALONE}.integration.registration").register_all()


def standalone_of(value: Any) -> Any:
    """``value`` (a class, function or module of ``lightning_hpu``) as built for the standalone packages: the same
    object where it does not depend on Lightning."""
    module = value.__name__ if isinstance(value, ModuleType) else getattr(value, "__module__", None)
    if not isinstance(module, str) or module not in renaming.renamed_modules():
        return value
    built = importlib.import_module(renaming.STANDALONE + module[len(renaming.SOURCE) :])
    return built if isinstance(value, ModuleType) else getattr(built, value.__name__)


def __getattr__(name: str) -> Any:
    import lightning_hpu

    if name.startswith("__"):
        raise AttributeError(name)
    try:
        value = getattr(lightning_hpu, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    return standalone_of(value)


def __dir__() -> list[str]:
    import lightning_hpu

    return sorted({*lightning_hpu.__all__, "register", "standalone_of"})
