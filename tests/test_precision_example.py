"""The precision example trains on the stand-in."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "precision.py"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LIGHTNING_HPU_BACKEND": "cpu", "LIGHTNING_HPU_CPU_DEVICE_NAME": "GAUDI2"}
    return subprocess.run(
        [sys.executable, str(EXAMPLE), *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_precision_example_on_the_standin() -> None:
    done = _run("--precision", "bf16-true", "--max-steps", "3")
    assert done.returncode == 0, done.stderr
    assert "precision: bf16-true, forward dtype: torch.bfloat16" in done.stdout
