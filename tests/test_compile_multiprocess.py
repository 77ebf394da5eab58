"""HPUCompile with DDP and fast DDP on two stand-in HPUs: one launch of ``compile_scenarios.py`` (2 processes)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_parallel_multiprocess import _env

SCRIPT = Path(__file__).with_name("compile_scenarios.py")


@pytest.mark.multiprocess
def test_regional_compile_with_ddp_fast_ddp_bf16_accumulation_and_last_batch(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path)], env=_env(2), capture_output=True, text=True, timeout=400
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    for rank in (0, 1):
        report = json.loads((tmp_path / f"rank{rank}.json").read_text())
        pad, drop = report["ddp_pad"], report["fast_drop"]
        # Each rank's 10 samples in batches of 4: padded to 3 full batches, or cut to 2, every epoch.
        assert pad["batch_sizes"] == [4, 4, 4] * 2
        assert drop["batch_sizes"] == [4, 4] * 2
        for scenario in (pad, drop):
            assert scenario["compiled_graphs"] > 0
            assert scenario["max_diff_between_ranks"] == 0.0
        assert pad["global_step"] == 4 and drop["global_step"] == 2  # 2 batches per step; an epoch end steps too
        assert pad["per_step"][0] > 0 and sum(pad["per_step"][2:]) == 0  # fixed shapes: no compiling after warm-up
