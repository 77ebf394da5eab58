"""The precision example trains on the stand-in."""

from __future__ import annotations

import os
import subprocess

from tests.helpers.paths import EXAMPLES

EXAMPLE = EXAMPLES / "precision.py"


def _run(python: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LIGHTNING_HPU_BACKEND": "cpu", "LIGHTNING_HPU_CPU_DEVICE_NAME": "GAUDI2"}
    return subprocess.run(
        [python, str(EXAMPLE), *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_precision_example_on_the_standin(python_executable: str) -> None:
    done = _run(python_executable, "--precision", "bf16-true", "--max-steps", "3")
    assert done.returncode == 0, done.stderr
    assert "precision: bf16-true, forward dtype: torch.bfloat16" in done.stdout
