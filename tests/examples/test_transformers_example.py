"""examples/transformers_finetune.py: stock Transformers models fine-tuned on two stand-in HPUs from a GaudiConfig."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.helpers.paths import ROOT
from tests.helpers.processes import scenario_environment

pytest.importorskip("transformers")


@pytest.mark.multiprocess
def test_transformers_example_fine_tunes_a_classifier_and_a_causal_lm_on_two_hpus(
    python_executable: str, tmp_path: Path
) -> None:
    env = scenario_environment(
        LIGHTNING_HPU_BACKEND="cpu", LIGHTNING_HPU_CPU_DEVICES="2", TRANSFORMERS_OFFLINE="1", HF_HUB_OFFLINE="1"
    )
    result = subprocess.run(
        [python_executable, str(ROOT / "examples" / "transformers_finetune.py"), "--devices", "2", "--max-steps", "4"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=400,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    for task in ("classification", "causal-lm"):
        (line,) = [line for line in result.stdout.splitlines() if line.startswith(f"{task}: losses")]
        losses = [float(value) for value in re.findall(r"\d+\.\d+", line.split(";")[0])]
        assert len(losses) == 4 and losses[-1] < losses[0], line  # it learns
        assert "precision bf16-mixed, optimizer FusedAdamW, 2 HPUs, MFU" in line  # the GaudiConfig and the monitor
    assert list(tmp_path.glob("lightning_logs/transformers_causal-lm/*/metrics.csv"))
