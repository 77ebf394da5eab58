"""lightning-hpu 0.1.0's module paths (``lightning_hpu.support.old_paths``): every module of 0.1.0 still imports, one
that moved with a ``DeprecationWarning`` naming its new path (attributed to the importing line, where Python shows it),
and each name of 0.1.0's API reference and examples it exported is the object the package exports today."""

from __future__ import annotations

import importlib
import sys
import warnings
from types import ModuleType
from typing import Any

import pytest

import lightning_hpu
from lightning_hpu import data, hpu_graphs
from lightning_hpu.support.old_paths import MOVED_MODULES, MOVED_NAMES
from tests.helpers.paths import DATA


def _modules() -> dict[str, list[str]]:
    listed: dict[str, list[str]] = {}
    for line in (DATA / "lightning_hpu_0_1_0_modules.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            module, _, names = line.partition(":")
            listed[module.strip()] = names.split()
    return listed


MODULES = _modules()


def _exported(module: str, name: str) -> Any:
    """The object the package exports today under ``name``, where users import it from."""
    homes: tuple[ModuleType, ...] = (lightning_hpu, hpu_graphs, data)
    for home in homes:
        if name in getattr(home, "__all__", ()) or name in vars(home):
            return getattr(home, name)
    raise AssertionError(f"{name} (of 0.1.0's {module}) is exported nowhere today")


def _deprecations(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning) and "0.1.0" in str(w.message)]


def test_the_list_is_0_1_0s_layout() -> None:
    assert len(MODULES) > 100
    assert {"lightning_hpu.strategies", "lightning_hpu.plugins", "lightning_hpu.hpu_graphs.callback"} <= set(MODULES)
    assert set(MOVED_MODULES) <= set(MODULES)
    assert "HPUGraphs" in MODULES["lightning_hpu.hpu_graphs"]


@pytest.mark.parametrize("module", list(MODULES))
def test_every_module_of_0_1_0_imports_and_serves_its_names(module: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for loaded in list(sys.modules):  # imported anew, so that its import warns again
        if loaded in MOVED_MODULES:
            monkeypatch.delitem(sys.modules, loaded)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        __import__(module)  # as an import statement does (importlib.import_module would be the importing line)
        imported = sys.modules[module]
        values = {name: getattr(imported, name) for name in MODULES[module]}
    deprecations = _deprecations(caught)
    if module in MOVED_MODULES:
        assert f"{module} is lightning-hpu 0.1.0's path: use {MOVED_MODULES[module]} instead" in " ".join(deprecations)
        assert all(w.filename == __file__ for w in caught if "0.1.0" in str(w.message)), "attributed to the import"
    moved_names = MOVED_NAMES.get(module, {})
    assert bool(deprecations) == (module in MOVED_MODULES or bool(set(MODULES[module]) & set(moved_names)))
    for name, value in values.items():  # what moved is what the package exports today; the rest is where it was
        if module in MOVED_MODULES or name in moved_names:
            assert value is _exported(module, name), f"{module}.{name}"


@pytest.mark.parametrize(("package", "name"), [(p, n) for p, names in MOVED_NAMES.items() for n in names])
def test_a_name_that_left_its_package_is_read_from_its_new_path_with_a_deprecation(package: str, name: str) -> None:
    module, _, attribute = MOVED_NAMES[package][name].partition(":")
    with pytest.warns(DeprecationWarning, match=rf"use `from {module} import {attribute}` instead") as caught:
        value = getattr(importlib.import_module(package), name)
    assert value is getattr(importlib.import_module(module), attribute)
    assert caught[0].filename == __file__


def test_0_1_0s_documented_imports_still_run() -> None:
    """The lines of 0.1.0's guide and examples, as users wrote them."""
    with pytest.warns(
        DeprecationWarning, match=r"lightning_hpu\.hpu_graphs\.HPUGraphs is lightning-hpu 0\.1\.0's path"
    ):
        from lightning_hpu.hpu_graphs import HPUGraphs, ModuleCacher
    with pytest.warns(DeprecationWarning, match=r"use `from lightning_hpu import HPULossLogger` instead"):
        from lightning_hpu.optimum import GaudiConfig, HPULossLogger
    assert (HPUGraphs, ModuleCacher, GaudiConfig, HPULossLogger) == (
        lightning_hpu.HPUGraphs,
        lightning_hpu.ModuleCacher,
        lightning_hpu.GaudiConfig,
        lightning_hpu.HPULossLogger,
    )


def test_a_name_no_package_had_is_still_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'HPUGraphz'"):
        hpu_graphs.HPUGraphz  # noqa: B018
    assert not hasattr(hpu_graphs, "__wrapped__")
