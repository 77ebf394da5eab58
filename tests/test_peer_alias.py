"""The renaming layer of ``scripts/peer_suite.py`` resolves every lightning-habana name it maps (no network, no suite).

The layer is what README's "Coming from lightning-habana" table says to write instead of each name; if a package
name it points at moves, the peer suite would fail on the import rather than on the behaviour, so this checks it.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ALIAS_FILE = Path(__file__).resolve().parents[1] / "scripts" / "peer" / "lightning_habana_alias.py"


@pytest.fixture
def alias(standin: Any) -> Iterator[ModuleType]:
    spec = importlib.util.spec_from_file_location("lightning_habana_alias", ALIAS_FILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    sys.meta_path[:] = [finder for finder in sys.meta_path if not isinstance(finder, module._AliasFinder)]
    for name in [name for name in sys.modules if name.split(".")[0] == "lightning_habana"]:
        del sys.modules[name]


def test_every_mapped_name_resolves_to_the_package(alias: ModuleType) -> None:
    import lightning_hpu
    from lightning_hpu.fabric.strategies import HPUParallelStrategy as FabricParallel

    for module_name in alias.ALIASES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            assert getattr(module, name) is not None, f"{module_name}.{name}"
    from lightning_habana import HPUDDPStrategy, HPUPrecisionPlugin  # type: ignore[import-not-found]
    from lightning_habana.fabric import HPUDDPStrategy as FabricDDP  # type: ignore[import-not-found]
    from lightning_habana.utils.resources import device_count  # type: ignore[import-not-found]

    assert HPUDDPStrategy is lightning_hpu.HPUParallelStrategy
    assert HPUPrecisionPlugin is lightning_hpu.HPUPrecisionPlugin
    assert FabricDDP is FabricParallel
    assert device_count() == lightning_hpu.HPUAccelerator.auto_device_count()


def test_a_name_not_carried_over_is_missing(alias: ModuleType) -> None:
    resources = importlib.import_module("lightning_habana.utils.resources")
    with pytest.raises(AttributeError, match="not carried over"):
        resources.get_hpu_synapse_version  # noqa: B018
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("lightning_habana.pytorch.datamodule")
