"""The runtime seam: backend choice, the stand-in's device rules, and the bridge module's isolation."""

from __future__ import annotations

import re

import pytest
import torch

from gaudi_standin.emulator import machine as standin_runtime
from lightning_hpu.runtime import (
    MEMORY_STAT_KEYS,
    HPUNotAvailableError,
    get_backend,
    hpu_available,
    require_backend,
)
from lightning_hpu.runtime.bridge import BridgeBackend
from tests.helpers.fresh_start import fresh_start, in_fresh_start_group
from tests.helpers.paths import SRC
from tests.helpers.recording_bridge import install_recording_bridge
from tests.helpers.standin import reset_backend

SRC = SRC / "lightning_hpu"


def test_stand_in_is_chosen_by_the_variable(standin: BridgeBackend) -> None:
    backend = get_backend()
    assert backend is standin and isinstance(
        backend, BridgeBackend
    )  # the Gaudi backend, driving the stand-in's habana_frameworks
    assert backend.device_count() == 1
    assert backend.device_name() == "GAUDI2"
    assert backend.torch_device() == torch.device("hpu")
    assert torch.ones(1, device=backend.torch_device()).device == torch.device("hpu", 0)
    assert standin_runtime.current().torch_device() == torch.device("hpu", 0)
    assert backend.process_group_backend == "hccl"


def test_without_gaudi_or_variable_hpu_is_unavailable_with_one_clear_sentence(no_hpu: None) -> None:
    assert get_backend() is None
    assert not hpu_available()
    with pytest.raises(HPUNotAvailableError, match=r"set LIGHTNING_HPU_BACKEND=cpu to use the CPU stand-in\.$"):
        require_backend()


@pytest.mark.parametrize(
    ("variable", "value", "named"),
    [
        ("LIGHTNING_HPU_BACKEND", "gpu", "LIGHTNING_HPU_BACKEND='gpu'"),
        ("LIGHTNING_HPU_CPU_DEVICES", "0", "LIGHTNING_HPU_CPU_DEVICES='0'"),
        ("LIGHTNING_HPU_CPU_DEVICES", "two", "LIGHTNING_HPU_CPU_DEVICES='two'"),
        ("LIGHTNING_HPU_CPU_DEVICE_NAME", "GAUDI9", "LIGHTNING_HPU_CPU_DEVICE_NAME='GAUDI9'"),
    ],
)
def test_bad_variables_are_named(monkeypatch: pytest.MonkeyPatch, variable: str, value: str, named: str) -> None:
    monkeypatch.setenv(variable, value)
    reset_backend()
    with pytest.raises(ValueError, match=re.escape(named)):
        require_backend()


def test_emulated_count_and_generation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIGHTNING_HPU_CPU_DEVICES", "4")
    monkeypatch.setenv("LIGHTNING_HPU_CPU_DEVICE_NAME", "gaudi")
    reset_backend()
    backend = require_backend()
    assert backend.device_count() == 4
    assert backend.device_name() == "GAUDI"
    assert not backend.supports_fp16()
    assert not backend.supports_fp8()


def test_mark_step_is_counted_in_lazy_mode_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PT_HPU_LAZY_MODE", "1")
    reset_backend()
    lazy = require_backend()
    assert isinstance(lazy, BridgeBackend)
    assert lazy.is_lazy()
    lazy.mark_step()
    lazy.mark_step()
    assert standin_runtime.current().counters.mark_steps == 2

    monkeypatch.setenv("PT_HPU_LAZY_MODE", "0")
    reset_backend()
    eager = require_backend()
    assert isinstance(eager, BridgeBackend)
    assert not eager.is_lazy()
    eager.mark_step()
    assert standin_runtime.current().counters.mark_steps == 0


def test_memory_stats_have_the_bridge_keys_and_track_the_peak(standin: BridgeBackend) -> None:
    small = torch.ones(1024, dtype=torch.uint8, device=standin.torch_device())
    stats = standin.memory_stats()
    assert tuple(stats) == MEMORY_STAT_KEYS
    assert stats["Limit"] == 96 * 2**30
    assert 1024 <= stats["InUse"] <= stats["MaxInUse"]
    big = torch.ones(64 * 2**20, dtype=torch.uint8, device=standin.torch_device())
    grown = standin.memory_stats()
    assert grown["InUse"] >= stats["InUse"] + 64 * 2**20
    del big
    assert standin.memory_stats()["MaxInUse"] >= grown["InUse"] > standin.memory_stats()["InUse"]
    del small


def test_only_the_bridge_module_imports_habana_frameworks() -> None:
    importers = sorted(
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if re.search(r"^\s*(import|from)\s+habana_frameworks", path.read_text(), flags=re.MULTILINE)
    )
    assert importers == ["runtime/bridge.py"]


def test_a_gaudi_is_detected_and_driven_through_the_bridge(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    install_recording_bridge(monkeypatch, calls)
    monkeypatch.delenv("LIGHTNING_HPU_BACKEND", raising=False)
    reset_backend()
    backend = require_backend()
    assert backend.name == "hpu"
    assert backend.device_count() == 8
    assert backend.device_name() == "GAUDI3"
    assert backend.torch_device() == torch.device("hpu")
    backend.mark_step()
    assert backend.memory_stats() == dict.fromkeys(MEMORY_STAT_KEYS, 0) | {"Limit": 5, "InUse": 1}
    assert calls.count("mark_step") == 1
    assert "get_device_name" in calls


@in_fresh_start_group
def test_import_is_cheap_and_opens_nothing() -> None:
    """Importing registers with Lightning, but creates no backend, imports no bridge, starts no process.

    A fresh interpreter's import is the point: the shared fresh start (``tests/helpers/fresh_start.py``) checks it."""
    assert fresh_start().section("import_is_cheap") == {
        "bridge_imported": False,
        "backend_created": False,
        "registered": True,
    }
