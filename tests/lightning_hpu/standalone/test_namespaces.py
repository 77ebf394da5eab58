"""Installed means working: Lightning learns ``hpu`` when it is imported, in ``lightning`` and in the standalone
``pytorch_lightning``/``lightning_fabric``, with no ``import lightning_hpu``; ``LIGHTNING_HPU_AUTOLOAD=0`` turns it
off; a machine without HPUs sees no difference; the core scenarios run under both namespaces.

The processes about start-up run ``sys.executable`` (the preloaded interpreter has imported Lightning already), one
per start (its environment, its first import); the program that never imports lightning_hpu and the CPU program
without HPUs are starts other test files share (``tests/helpers/fresh_start.py``). The rest run in the preloaded
interpreter.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.fresh_start import cpu_program, fresh_start, in_fresh_start_group
from tests.helpers.namespaces import NAMESPACE_ENV, NAMESPACES
from tests.helpers.paths import ROOT, SCENARIOS

NAMESPACE_SCENARIOS = SCENARIOS / "namespace_scenario.py"
_NOT_INHERITED = ("LIGHTNING_HPU_", "PT_HPU_", "HABANA_", "WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_")


def _env(**values: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(_NOT_INHERITED)}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT)])
    env.update(values)
    return env


def _python(
    code: str, env: dict[str, str], cwd: Path, python: str = sys.executable
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [python, "-c", textwrap.dedent(code)], env=env, cwd=cwd, capture_output=True, text=True, timeout=300
    )


def _last_json(result: subprocess.CompletedProcess[str]) -> Any:
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@in_fresh_start_group
def test_every_lightning_package_knows_hpu_without_importing_lightning_hpu() -> None:
    """A program that never imports lightning_hpu: a fresh interpreter's start is the point, so the shared fresh start
    (``tests/helpers/fresh_start.py``, ``no_import``) runs it."""
    seen = fresh_start().section("no_import")
    assert seen["imported_by_lightning"], "importing lightning registered lightning-hpu"
    assert seen["lightning"] == ["lightning_hpu.pytorch.accelerator", "SingleHPUStrategy"]
    assert seen["lightning_auto"] == "lightning_hpu.pytorch.accelerator"  # Trainer() picks the HPU
    assert seen["pytorch_lightning"] == [
        "lightning_hpu.standalone.pytorch.accelerator",
        "lightning_hpu.standalone.pytorch.strategies.single",
    ]
    assert seen["pytorch_lightning_auto"] == "lightning_hpu.standalone.pytorch.accelerator"
    # Fabric's accelerator and precision plugin live below both trees (the Trainer's extend them).
    assert seen["lightning_fabric"] == [
        "lightning_hpu.standalone.device.accelerator",
        "lightning_hpu.standalone.precision.hpu_precision",
    ]
    assert seen["lightning_fabric_auto"] == "lightning_hpu.standalone.device.accelerator"
    assert seen["refused"] == [
        "`Trainer(strategy=HPUParallelStrategy(...))` is a class of lightning, but this Trainer is"
        " pytorch_lightning/lightning_fabric's, whose classes it cannot use: import both from"
        " pytorch_lightning/lightning_fabric and lightning_hpu.standalone, or both from lightning and lightning_hpu.",
        "`Trainer(strategy=HPUParallelStrategy(...))` is a class of pytorch_lightning/lightning_fabric, but this"
        " Trainer is lightning's, whose classes it cannot use: import both from lightning and lightning_hpu, or both"
        " from pytorch_lightning/lightning_fabric and lightning_hpu.standalone.",
    ]
    assert seen["shared"], "a Lightning-free function is the same object under both namespaces"


STANDALONE_FIRST = """
import json, warnings
warnings.simplefilter("error", RuntimeWarning)  # a failed registration warns
from lightning_hpu.standalone.fabric.strategies import HPUDDPStrategy  # imports lightning_fabric, pytorch_lightning
import pytorch_lightning as pl
from lightning_fabric import Fabric

quiet = dict(logger=False, enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
print(json.dumps({
    "pytorch_lightning": type(pl.Trainer(accelerator="hpu", devices=1, **quiet).accelerator).__module__,
    "lightning_fabric": type(Fabric(accelerator="hpu", devices=1).accelerator).__module__,
}))
"""


@pytest.mark.slow  # a fresh Python
def test_importing_a_standalone_module_before_lightning_still_registers(tmp_path: Path) -> None:
    """A real interpreter: its first import, a standalone module's before any Lightning's, is the point."""
    # The module imports pytorch_lightning half-way through its own run; registering at that moment would import
    # it half-run: the registration waits until it has run.
    seen = _last_json(_python(STANDALONE_FIRST, _env(LIGHTNING_HPU_BACKEND="cpu"), tmp_path))
    assert seen == {
        "pytorch_lightning": "lightning_hpu.standalone.pytorch.accelerator",
        "lightning_fabric": "lightning_hpu.standalone.device.accelerator",
    }


@in_fresh_start_group
def test_a_machine_without_hpus_sees_no_difference_and_the_switch_turns_registration_off() -> None:
    """Real interpreters, one per setting of the switch: what importing Lightning prints and warns is the point
    (``tests/helpers/fresh_start.py``'s CPU program, whose registries test_registration.py reads)."""
    on, off = cpu_program("on")["start"], cpu_program("off")["start"]
    assert on["imported"] and not off["imported"]
    assert on["output"] == off["output"] and not [line for line in on["output"] if "HPU" in line]
    assert on["warnings"] == off["warnings"]
    assert on["auto"] == off["auto"] == "CPUAccelerator"
    assert on["hpu"].startswith("HPUNotAvailableError: HPU was requested but the Intel Gaudi bridge")
    assert "LIGHTNING_HPU_BACKEND=cpu" in on["hpu"]
    assert off["hpu"].startswith("ValueError: You selected an invalid accelerator name: `accelerator='hpu'`")


@pytest.mark.slow  # a fresh Python
def test_a_broken_install_warns_once_and_leaves_lightning_as_it_was(tmp_path: Path) -> None:
    """A real interpreter: the broken package must be the one importing Lightning meets at start-up."""
    broken = tmp_path / "broken" / "lightning_hpu"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('a file of the install is missing')\n")
    env = _env(LIGHTNING_HPU_BACKEND="cpu")
    env["PYTHONPATH"] = os.pathsep.join([str(broken.parent), str(ROOT)])  # the broken package hides the real one
    code = """
    import json, warnings
    warnings.simplefilter("always")
    with warnings.catch_warnings(record=True) as caught:
        import lightning as L
        import pytorch_lightning as pl
        trainer = L.Trainer(accelerator="cpu", logger=False, enable_checkpointing=False)
    print(json.dumps([str(w.message) for w in caught if "lightning-hpu" in str(w.message)]))
    """
    messages = _last_json(_python(code, env, tmp_path))
    assert len(messages) == 1, messages
    assert messages[0].startswith("lightning-hpu is installed but could not register accelerator='hpu' with lightning")
    assert "because ImportError: a file of the install is missing" in messages[0]  # what failed, not "reinstall"
    assert "LIGHTNING_HPU_AUTOLOAD=0" in messages[0] and "einstall" not in messages[0]


def _scenarios(python: str, tmp_path: Path, namespace: str, mode: str) -> dict[str, Any]:
    out = tmp_path / mode
    out.mkdir()
    env = _env(LIGHTNING_HPU_BACKEND="cpu", **{NAMESPACE_ENV: namespace})
    if mode == "lazy":
        env["PT_HPU_LAZY_MODE"] = "1"
    result = subprocess.run(
        [python, str(NAMESPACE_SCENARIOS), str(out), mode],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, (result.stdout + result.stderr)[-5000:]
    return json.loads((out / "report.json").read_text())


@pytest.mark.multiprocess
@pytest.mark.parametrize("namespace", NAMESPACES)
def test_core_scenarios_run_in_both_namespaces(namespace: str, python_executable: str, tmp_path: Path) -> None:
    """Fit and resume, bf16 and fp8, the profiler, compile, LightningCLI, GaudiConfig and HPU graphs (lazy mode),
    written once against ``lightning`` and run against each namespace."""
    report = {**_scenarios(python_executable, tmp_path, namespace, "eager")}
    report.update(_scenarios(python_executable, tmp_path, namespace, "lazy"))
    ours = "lightning_hpu.standalone." if namespace == "standalone" else "lightning_hpu."
    theirs = "pytorch_lightning." if namespace == "standalone" else "lightning.pytorch."

    for scenario in ("fit_and_resume", "cli", "gaudi_config", "hpu_graphs"):
        classes = report[scenario]["classes"]
        assert classes["trainer"].startswith(theirs), classes
        assert classes["accelerator"] == f"{ours}pytorch.accelerator.HPUAccelerator", classes
        assert classes["strategy"] == f"{ours}pytorch.strategies.single.SingleHPUStrategy", classes
        assert classes["precision"].startswith(f"{ours}pytorch.plugins."), classes
    assert report["fit_and_resume"]["resume_max_diff"] == 0.0
    assert report["precisions"]["bf16-mixed"]["plugin"] == f"{ours}pytorch.plugins.precision.HPUPrecisionPlugin"
    assert report["precisions"]["fp8"]["plugin"] == f"{ours}pytorch.plugins.precision.HPUPrecisionPlugin"
    assert all(entry["loss"] == entry["loss"] for entry in report["precisions"].values())  # not NaN
    assert report["profiler"]["by_name"] == f"{ours}pytorch.profilers.hpu.HPUProfiler"
    assert report["profiler"]["traces"], "the HPU profiler wrote a trace"
    assert report["compiled"]["callback"] == f"{ours}pytorch.callbacks.compile"
    assert report["compiled"]["loss"] == pytest.approx(report["compiled"]["eager_loss"], rel=1e-4)
    assert report["cli"]["lr"] == 0.01
    assert report["hpu_graphs"]["lazy"] and report["hpu_graphs"]["callback"] == f"{ours}pytorch.callbacks.hpu_graphs"


NEURALFORECAST = """
import json, sys
import numpy as np, pandas as pd, torch
from neuralforecast import NeuralForecast
from neuralforecast.models import NHITS

n = 48
frame = pd.DataFrame({"unique_id": "s", "ds": pd.date_range("2024-01-01", periods=n, freq="D"),
                      "y": np.sin(np.arange(n) / 4.0)})
model = NHITS(h=4, input_size=8, max_steps=5, accelerator="hpu", devices=1, enable_progress_bar=False,
              logger=False, enable_checkpointing=False)
forecast = NeuralForecast(models=[model], freq="D")
forecast.fit(frame)
predicted = forecast.predict()
print(json.dumps({
    "rows": len(predicted),
    "hpu_memory": torch.hpu.max_memory_allocated(),
    "standalone_accelerator": "lightning_hpu.standalone.pytorch.accelerator" in sys.modules,
    "uses_pytorch_lightning": "pytorch_lightning" in sys.modules,
}))
"""


@pytest.mark.skipif(importlib.util.find_spec("neuralforecast") is None, reason="needs neuralforecast (test extra)")
def test_a_library_built_on_pytorch_lightning_trains_on_the_hpu(python_executable: str, tmp_path: Path) -> None:
    """Nixtla's neuralforecast builds its own ``pytorch_lightning.Trainer`` from the model's arguments (in the
    preloaded interpreter: the library's use of the HPU is the point, not the start; its server has not imported
    ``pytorch_lightning``, so the library's import of it still registers the standalone namespace)."""
    result = _python(NEURALFORECAST, _env(LIGHTNING_HPU_BACKEND="cpu"), tmp_path, python_executable)
    seen = _last_json(result)
    assert seen == {"rows": 4, "hpu_memory": seen["hpu_memory"], "standalone_accelerator": True,
                    "uses_pytorch_lightning": True}  # fmt: skip
    assert seen["hpu_memory"] > 0, "the model ran on the HPU"
    assert "HPU available: True (GAUDI2, eager, CPU stand-in), using: 1 HPU" in result.stdout + result.stderr
