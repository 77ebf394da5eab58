"""The README's example script and the LightningCLI config run as a user would run them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from lightning.pytorch.cli import LightningCLI

from lightning_hpu import HPUAccelerator, HPUPrecisionPlugin, SingleHPUStrategy
from lightning_hpu.runtime import bridge_installed
from tests.helpers.paths import EXAMPLES

EXAMPLES = EXAMPLES
sys.path.insert(0, str(EXAMPLES))

from train_single_hpu import Classifier  # noqa: E402


def test_cli_config_fits_with_hpu_components_by_class_path(tmp_path: Path) -> None:
    cli = LightningCLI(
        Classifier,
        args=[
            "fit",
            "--config",
            str(EXAMPLES / "cli_config.yaml"),
            "--trainer.max_epochs=1",
            "--trainer.limit_train_batches=4",
            "--trainer.limit_val_batches=2",
            f"--trainer.default_root_dir={tmp_path}",
        ],
        save_config_kwargs={"overwrite": True},
    )
    trainer = cli.trainer
    assert isinstance(trainer.accelerator, HPUAccelerator)
    assert isinstance(trainer.strategy, SingleHPUStrategy)
    assert isinstance(trainer.precision_plugin, HPUPrecisionPlugin)
    assert trainer.precision_plugin.precision == "bf16-mixed"
    assert trainer.global_step == 4
    assert torch.isfinite(trainer.callback_metrics["val_loss"])


def _run_example(python: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [python, str(EXAMPLES / "train_single_hpu.py"), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def test_example_trains_on_the_stand_in_and_refuses_without_it(tmp_path: Path, python_executable: str) -> None:
    env = {**os.environ, "LIGHTNING_HPU_BACKEND": "cpu"}
    result = _run_example(python_executable, env, "--max-epochs", "2", "--default-root-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr[-3000:]
    summary = result.stdout.strip().splitlines()[-1]
    fields = dict(field.split("=", 1) for field in summary.split())
    assert float(fields["test_acc"]) > 0.9
    assert int(fields["predictions"]) == 64
    assert Path(fields["checkpoint"]).is_file()
    # Lightning's layout under the root directory, with lightning_logs once: lightning_logs/version_0/checkpoints/
    assert Path(fields["checkpoint"]).relative_to(tmp_path).parts[:3] == ("lightning_logs", "version_0", "checkpoints")


@pytest.mark.skipif(bridge_installed(), reason="this machine has the Gaudi bridge")
def test_example_without_gaudi_says_how_to_use_the_stand_in(tmp_path: Path, python_executable: str) -> None:
    env = {key: value for key, value in os.environ.items() if key != "LIGHTNING_HPU_BACKEND"}
    result = _run_example(python_executable, env, "--max-epochs", "1", "--default-root-dir", str(tmp_path))
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "error: HPU was requested but the Intel Gaudi bridge (habana_frameworks) is not installed; run on a Gaudi"
        " machine, or set LIGHTNING_HPU_BACKEND=cpu to use the CPU stand-in."
    )


def test_deepspeed_example_announces_the_cpu_adam_build_only_before_it_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("deepspeed")
    import deepspeed_zero

    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    assert deepspeed_zero.extensions_root() == tmp_path
    assert not deepspeed_zero.cpu_adam_built()
    (tmp_path / "cpu_adam").mkdir()
    (tmp_path / "cpu_adam" / "cpu_adam.so").touch()  # where torch builds it when TORCH_EXTENSIONS_DIR is set
    assert deepspeed_zero.cpu_adam_built()
