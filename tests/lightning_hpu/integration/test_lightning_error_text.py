"""Lightning's error text kept: where lightning-hpu checks an argument that Lightning checks too, its error is of
Lightning's class and starts with Lightning's message, word for word, and the HPU sentence comes after it; in the
``lightning`` namespace and in the standalone ``pytorch_lightning``/``lightning_fabric``.

The cases are ``tests/scenarios/lightning_text_scenario.py``: each meets the same argument once with plain Lightning
on the CPU and once on the HPU (the stand-in).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.namespaces import NAMESPACE_ENV
from tests.helpers.paths import ROOT, SCENARIOS
from tests.scenarios import lightning_text_scenario

#: Cases where the HPU adds nothing to Lightning's message (Lightning's sentence names the fix already).
LIGHTNINGS_WORDS_ONLY = {"Fabric ModelParallelStrategy 16-mixed"}
#: Where Lightning's message names the class that raised it, the HPU's names the HPU class (Lightning's formula).
RENAMED = {"TorchCheckpointIO": "HPUCheckpointIO"}


def _check(report: dict[str, dict[str, Any]]) -> None:
    assert len(report) == 21, sorted(report)
    for case, errors in report.items():
        (lightning_classes, lightning), (hpu_classes, hpu) = errors["lightning"], errors["hpu"]
        assert lightning and hpu, f"{case}: {errors}"
        assert lightning_classes[0] in hpu_classes, f"{case}: {hpu_classes[0]} is no {lightning_classes[0]}"
        for name, renamed in RENAMED.items():
            lightning = lightning.replace(f"`{name}`", f"`{renamed}`")
        assert hpu.startswith(lightning), f"{case}:\n  Lightning: {lightning}\n  HPU:       {hpu}"
        if case not in LIGHTNINGS_WORDS_ONLY:
            assert len(hpu) > len(lightning) + 20, f"{case}: no HPU sentence after Lightning's: {hpu}"


def test_lightnings_message_comes_first_in_the_lightning_namespace(standin: object, tmp_path: Path) -> None:
    _check(lightning_text_scenario.cases(tmp_path))


@pytest.mark.multiprocess
def test_lightnings_message_comes_first_in_the_standalone_packages(python_executable: str, tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    result = subprocess.run(
        [python_executable, str(SCENARIOS / "lightning_text_scenario.py"), str(out)],
        env={**os.environ, NAMESPACE_ENV: "standalone", "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, (result.stdout + result.stderr)[-5000:]
    report = json.loads(out.read_text())
    assert report["trainer"].startswith("pytorch_lightning.")
    _check(report["cases"])


@pytest.mark.parametrize("accelerator", ["hpu", "auto"])
def test_the_fix_the_gpu_hint_gives_picks_the_hpu(standin: object, accelerator: str) -> None:
    from lightning.pytorch import Trainer

    trainer = Trainer(accelerator=accelerator, devices=1, logger=False, enable_checkpointing=False)
    assert type(trainer.accelerator).__name__ == "HPUAccelerator"


def test_without_hpus_the_gpu_error_is_lightnings_alone(no_hpu: None) -> None:
    from lightning.pytorch import Trainer
    from lightning.pytorch.utilities.exceptions import MisconfigurationException

    with pytest.raises(MisconfigurationException) as raised:
        Trainer(accelerator="gpu", logger=False)
    assert str(raised.value) == "No supported gpu backend found!"
