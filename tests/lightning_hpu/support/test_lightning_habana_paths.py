"""lightning-habana's module paths under ``lightning_hpu`` (``lightning_hpu.support.old_paths``), and the peer
suite's renaming layer (``scripts/peer/lightning_habana_alias.py``), which renames the package and nothing else.

A lightning-habana user replaces ``lightning_habana`` with ``lightning_hpu`` in their imports; every module path of
lightning-habana 1.7 must then import and serve the names README's "Coming from lightning-habana" table maps.
"""

from __future__ import annotations

import importlib
import importlib.resources
import importlib.util
import json
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

from tests.helpers.paths import DATA, ROOT

ALIAS_FILE = ROOT / "scripts" / "peer" / "lightning_habana_alias.py"

#: Every ``from lightning_habana... import name`` of lightning-habana 1.7's modules and README's examples, renamed.
LIGHTNING_HABANA_IMPORTS = {
    "lightning_hpu": ["HPUAccelerator", "HPUDDPStrategy", "HPUFSDPPrecision", "HPUProfiler", "HPU_AVAILABLE"],
    "lightning_hpu.pytorch": ["HPUAccelerator", "HPUDDPStrategy", "SingleHPUStrategy", "HPUDeepSpeedPrecisionPlugin"],
    "lightning_hpu.pytorch.accelerator": ["HPUAccelerator"],
    "lightning_hpu.pytorch.strategies": ["HPUDDPStrategy", "HPUParallelStrategy", "HPUFSDPStrategy"],
    "lightning_hpu.pytorch.strategies.ddp": ["HPUDDPStrategy"],
    "lightning_hpu.pytorch.strategies.deepspeed": ["HPUDeepSpeedStrategy"],
    "lightning_hpu.pytorch.strategies.fsdp": ["HPUFSDPStrategy"],
    "lightning_hpu.pytorch.strategies.single": ["SingleHPUStrategy"],
    "lightning_hpu.pytorch.plugins": ["HPUPrecisionPlugin", "HPUCheckpointIO", "HPUFSDPPrecision"],
    "lightning_hpu.pytorch.plugins.fsdp_precision": ["HPUFSDPPrecision", "HPUPrecisionPlugin"],
    "lightning_hpu.pytorch.plugins.io_plugin": ["HPUCheckpointIO"],
    "lightning_hpu.pytorch.profiler.profiler": ["HPUProfiler"],
    "lightning_hpu.fabric": ["HPUAccelerator", "HPUDDPStrategy", "HPUPrecision", "HPUFSDPPrecision"],
    "lightning_hpu.fabric.accelerator": ["HPUAccelerator"],
    "lightning_hpu.fabric.strategies": ["HPUDDPStrategy", "SingleHPUStrategy", "HPUFSDPStrategy"],
    "lightning_hpu.fabric.strategies.ddp": ["HPUDDPStrategy"],
    "lightning_hpu.fabric.strategies.single": ["SingleHPUStrategy"],
    "lightning_hpu.fabric.strategies.fsdp": ["HPUFSDPStrategy"],
    "lightning_hpu.fabric.plugins.fsdp_precision": ["HPUFSDPPrecision"],
    "lightning_hpu.utils.resources": ["device_count", "get_device_name_from_hlsmi", "is_fp8_available"],
    "lightning_hpu.utils.hpu_distributed": ["supported_reduce_ops"],
    # lightning-habana's own language-model example imports this version flag.
    "lightning_hpu.utils.imports": ["_LIGHTNING_GREATER_EQUAL_2_3_0", "_HABANA_FRAMEWORK_AVAILABLE"],
}
#: lightning-habana 1.7.0's modules, read from its git tag 1.7.0.
LIGHTNING_HABANA_1_7_MODULES = DATA / "lightning_habana_1_7_modules.txt"


def test_every_module_of_lightning_habana_1_7_imports_under_the_new_name(standin: Any) -> None:
    modules = [
        line.strip() for line in LIGHTNING_HABANA_1_7_MODULES.read_text().splitlines() if not line.startswith("#")
    ]
    assert len(modules) > 35 and "lightning_habana.utils.imports" in modules
    for old_name in modules:
        new_name = "lightning_hpu" + old_name.removeprefix("lightning_habana")
        try:
            importlib.import_module(new_name)
        except ImportError as error:
            raise AssertionError(f"`import {old_name}` has no counterpart `import {new_name}`: {error}") from error
    assert importlib.import_module("lightning_hpu.utils.imports")._LIGHTNING_GREATER_EQUAL_2_3_0 is True


def test_every_lightning_habana_module_path_serves_its_names_from_the_package(standin: Any) -> None:
    import lightning_hpu
    from lightning_hpu.fabric.strategies import HPUFSDPStrategy as FabricFSDP
    from lightning_hpu.fabric.strategies import HPUParallelStrategy as FabricParallel
    from lightning_hpu.support.old_paths import HABANA_MODULES

    for module_name, names in LIGHTNING_HABANA_IMPORTS.items():
        module = importlib.import_module(module_name)
        for name in names:
            assert getattr(module, name) is not None, f"{module_name}.{name}"
    for module_name, table in HABANA_MODULES.items():
        module = importlib.import_module(module_name)
        if getattr(module, "__file__", None) is None:  # served by the path finder; else a module of the package
            assert sorted(module.__all__) == sorted(table)
        for name in table:
            assert getattr(module, name) is not None, f"{module_name}.{name}"

    pytorch = importlib.import_module("lightning_hpu.pytorch.strategies.ddp")
    fabric = importlib.import_module("lightning_hpu.fabric.strategies.ddp")
    assert pytorch.HPUDDPStrategy is lightning_hpu.HPUParallelStrategy
    assert fabric.HPUDDPStrategy is FabricParallel
    assert importlib.import_module("lightning_hpu.fabric").HPUFSDPStrategy is FabricFSDP
    resources = importlib.import_module("lightning_hpu.utils.resources")
    assert resources.device_count() == lightning_hpu.HPUAccelerator.auto_device_count()
    assert resources.get_device_name_from_hlsmi() == "GAUDI2"
    assert resources.is_fp8_available() == (True, "")
    assert lightning_hpu.HPU_AVAILABLE is True
    assert set(importlib.import_module("lightning_hpu.utils.hpu_distributed").supported_reduce_ops) == {
        "sum",
        "min",
        "max",
    }


def test_the_fp8_config_files_are_read_by_lightning_habanas_package_path() -> None:
    config = importlib.resources.files("lightning_hpu.pytorch.plugins.quant_config.fp8") / "maxabs_measure.json"
    assert json.loads(config.read_text())["mode"] == "MEASURE"


def test_a_name_not_carried_over_fails_its_import_with_the_replacement(standin: Any) -> None:
    with pytest.raises(ImportError, match=r"HPUDataModule is not carried over.*torch DataLoader"):
        from lightning_hpu.pytorch.datamodule.datamodule import HPUDataModule  # noqa: F401
    with pytest.raises(ImportError, match="hl-smi -v"):
        from lightning_hpu.utils.resources import get_hpu_synapse_version  # noqa: F401
    with pytest.raises(ImportError, match="cannot import name 'NoSuchName'"):
        from lightning_hpu.pytorch import NoSuchName  # type: ignore[attr-defined]  # noqa: F401


def test_a_module_of_the_package_wins_over_a_served_path() -> None:
    import lightning_hpu.fabric.strategies as real

    assert real.__file__ is not None and real.__file__.endswith("strategies/__init__.py")


@pytest.fixture
def alias(standin: Any) -> Iterator[ModuleType]:
    spec = importlib.util.spec_from_file_location("lightning_habana_alias", ALIAS_FILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    sys.meta_path[:] = [finder for finder in sys.meta_path if not isinstance(finder, module._RenamingFinder)]
    for name in [name for name in sys.modules if name.split(".")[0] == "lightning_habana"]:
        del sys.modules[name]


def test_the_peer_layer_only_renames_the_package(alias: ModuleType) -> None:
    import lightning_hpu

    for module_name, names in LIGHTNING_HABANA_IMPORTS.items():
        old = importlib.import_module(module_name.replace("lightning_hpu", "lightning_habana", 1))
        new = importlib.import_module(module_name)
        for name in names:
            assert getattr(old, name) == getattr(new, name), f"{module_name}.{name}"
    from lightning_habana.pytorch.strategies.deepspeed import (  # type: ignore[import-not-found]
        _HPU_DEEPSPEED_AVAILABLE,
    )

    assert _HPU_DEEPSPEED_AVAILABLE is (importlib.util.find_spec("deepspeed") is not None)
    assert importlib.import_module("lightning_habana").HPUProfiler is lightning_hpu.HPUProfiler
    fp8_configs = importlib.resources.files("lightning_habana.pytorch.plugins.quant_config.fp8")
    assert (fp8_configs / "maxabs_quant.json").is_file()
