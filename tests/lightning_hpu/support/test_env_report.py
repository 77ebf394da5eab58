"""The environment report of ``python -m lightning_hpu`` (``lightning-hpu-env``): what it lists and what it flags."""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lightning_hpu.support import env_report
from tests.helpers.paths import ROOT
from tests.helpers.standin import reset_backend


def _report(monkeypatch: pytest.MonkeyPatch, **variables: str) -> env_report.Report:
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    reset_backend()
    return env_report.collect()


def _rows(report: env_report.Report, section: str) -> dict[str, str]:
    return dict(dict(report.sections)[section])


def test_a_healthy_stand_in_is_reported_without_problems(standin: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    report = _report(monkeypatch, LIGHTNING_HPU_CPU_DEVICES="2", HCCL_SOCKET_IFNAME="eth0")
    assert report.errors == [] and report.warnings == []
    backend = _rows(report, "Backend")
    assert backend["backend"].startswith("CPU stand-in") and backend["device"] == "GAUDI2"
    assert backend["devices"] == "2" and backend["mode"] == "eager" and backend["fp8 engine"] == "importable"
    versions = _rows(report, "Versions")
    assert versions["torch"].startswith(importlib.metadata.version("torch"))
    assert "(supported: 2.6)" in versions["Lightning"]
    variables = _rows(report, "Environment variables")
    assert variables["HCCL_SOCKET_IFNAME"] == "eth0" and variables["LIGHTNING_HPU_CPU_DEVICES"] == "2"
    assert "PATH" not in variables
    packages = _rows(report, "Optional packages")
    assert packages["DeepSpeed"] == importlib.metadata.version("deepspeed")
    assert packages["INC (neural_compressor)"] == "not installed"
    text = report.render()
    assert text.splitlines()[0] == "lightning-hpu environment report" and text.endswith("none found")


@pytest.mark.parametrize(
    ("variables", "error"),
    [
        ({"LIGHTNING_HPU_BACKEND": "gpu"}, "LIGHTNING_HPU_BACKEND='gpu' is not a backend"),
        ({"LIGHTNING_HPU_CPU_DEVICES": "two"}, "LIGHTNING_HPU_CPU_DEVICES='two' must be a positive integer"),
        ({"LIGHTNING_HPU_CPU_DEVICE_NAME": "GAUDI5"}, "LIGHTNING_HPU_CPU_DEVICE_NAME='GAUDI5' is not a Gaudi"),
        ({"HABANA_VISIBLE_MODULES": "0,0"}, "HABANA_VISIBLE_MODULES='0,0' is not a list of HPU module ids"),
        ({"HABANA_VISIBLE_MODULES": "1,3"}, "names module(s) [3], but the stand-in emulates 2 HPU(s)"),
        ({"HLS_MODULE_ID": "0", "HABANA_VISIBLE_MODULES": "1"}, "HLS_MODULE_ID=0 binds this process to a module"),
    ],
)
def test_settings_that_would_stop_a_run_are_errors(
    standin: Any, monkeypatch: pytest.MonkeyPatch, variables: dict[str, str], error: str
) -> None:
    report = _report(monkeypatch, **{"LIGHTNING_HPU_CPU_DEVICES": "2", **variables})
    assert len(report.errors) == 1 and error in report.errors[0], report.errors


def test_no_gaudi_and_no_stand_in_is_an_error(no_hpu: None) -> None:
    report = env_report.collect()
    assert report.errors == [
        "No Gaudi and no stand-in: accelerator='hpu' would fail; run on a Gaudi machine, or set"
        " LIGHTNING_HPU_BACKEND=cpu for the CPU stand-in."
    ]


def test_lazy_mode_with_compile_settings_is_a_warning(standin: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    report = _report(monkeypatch, PT_HPU_LAZY_MODE="1", TORCHDYNAMO_VERBOSE="1")
    assert report.errors == []
    assert report.warnings == [
        "PT_HPU_LAZY_MODE=1 selects the legacy lazy mode, where torch.compile is refused, but TORCHDYNAMO_VERBOSE"
        " configure(s) torch.compile; set PT_HPU_LAZY_MODE=0 to compile, or drop them."
    ]
    assert _rows(report, "Backend")["mode"] == "lazy (legacy)"
    assert _report(monkeypatch, PT_HPU_LAZY_MODE="0").warnings == [], "eager mode compiles: nothing to say"


def test_recipe_cache_on_a_shared_file_system_needs_the_nfs_flag(
    standin: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(env_report, "_mount_type", lambda path: "nfs4" if str(path).startswith("/shared") else "ext4")
    warned = _report(monkeypatch, PT_HPU_RECIPE_CACHE_CONFIG="/shared/cache,false,1024").warnings
    assert len(warned) == 1 and "/shared/cache, on a shared file system (nfs4), without the NFS flag" in warned[0]
    assert _report(monkeypatch, PT_HPU_RECIPE_CACHE_CONFIG="/shared/cache,false,1024,true").warnings == []
    assert _report(monkeypatch, PT_HPU_RECIPE_CACHE_CONFIG=f"{tmp_path},false,1024").warnings == []


def test_versions_outside_the_supported_ranges_are_warnings(standin: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(env_report.SUPPORTED_VERSIONS, "torch", ((1, 9), (1, 10)))  # below every leg's torch
    warned = _report(monkeypatch).warnings
    assert len(warned) == 1 and warned[0].startswith("torch ") and "(1.9 to 1.10)" in warned[0]


def test_python_m_and_the_console_script_run_the_report_and_fail_on_errors() -> None:
    """A real interpreter: TORCH_COMPILE_DEBUG is read while torch starts, so the preloaded one would hand it over."""
    scripts = (ROOT / "pyproject.toml").read_text().split("\n[project.scripts]\n", 1)[1].split("\n[", 1)[0]
    entry = re.search(r'^lightning-hpu-env = "([\w.]+):(\w+)"$', scripts, re.MULTILINE)
    assert entry is not None, "pyproject.toml declares the console script"
    module, function = entry.groups()
    assert getattr(importlib.import_module(module), function) is env_report.main
    env = {
        **os.environ,
        "LIGHTNING_HPU_BACKEND": "cpu",
        "LIGHTNING_HPU_CPU_DEVICES": "1",
        "HABANA_VISIBLE_MODULES": "0,1",
        "PT_HPU_LAZY_MODE": "1",
        "TORCH_COMPILE_DEBUG": "1",
    }
    done = subprocess.run(
        [sys.executable, "-m", "lightning_hpu"], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 1, done.stderr[-3000:]
    problems = done.stdout.split("\nProblems:\n", 1)[1].splitlines()
    assert [line.split(":", 1)[0].strip() for line in problems] == ["error", "warning"], problems
    assert "HABANA_VISIBLE_MODULES names module(s) [1]" in problems[0] and "TORCH_COMPILE_DEBUG" in problems[1]
    assert re.search(r"^  HABANA_VISIBLE_MODULES +0,1$", done.stdout, re.MULTILINE)
    assert done.stderr == "", "the report prints no warnings of its own"


def test_misspelt_or_idle_lightning_hpu_variables_are_warnings(standin: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    report = _report(monkeypatch, LIGHTNING_HPU_CPU_DEVICE="4")
    assert report.warnings == [
        "LIGHTNING_HPU_CPU_DEVICE is not a lightning-hpu variable and has no effect; did you mean"
        " LIGHTNING_HPU_CPU_DEVICES?"
    ]
    monkeypatch.setenv("LIGHTNING_HPU_BACKEND", "hpu")
    idle = _report(monkeypatch, LIGHTNING_HPU_CPU_DEVICES="4").warnings
    assert any(warning.startswith("LIGHTNING_HPU_CPU_DEVICES shape(s) the CPU stand-in") for warning in idle), idle


def test_the_packages_other_variables_and_the_test_suites_are_not_taken_for_misspellings(
    standin: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = _report(
        monkeypatch,
        LIGHTNING_HPU_EXTENSIONS_DIR="/tmp/hpu-build",
        LIGHTNING_HPU_LAUNCHER_PID="4242",
        LIGHTNING_HPU_TEST_WORKERS="3",
        LIGHTNING_HPU_TEST_PRELOADED_PYTHON="0",
    )
    assert report.warnings == [] and report.errors == []


def test_the_reported_ranges_are_the_tested_matrix_and_pyproject_toml_states_it() -> None:
    from lightning_hpu.support.versions import TESTED

    assert env_report.SUPPORTED_VERSIONS == {
        "torch": ((2, 9), (2, 15)),
        "Lightning": ((2, 6), (2, 6)),
        "Python": ((3, 10), (3, 12)),
    }
    project = (ROOT / "pyproject.toml").read_text()
    for tested in TESTED:
        if tested.name != "python":
            assert f'"{tested.name}{tested.specifier}"' in project, tested
