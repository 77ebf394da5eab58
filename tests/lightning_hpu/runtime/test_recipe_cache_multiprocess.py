"""Recipes kept across runs by the ranks of a node: two 2-rank ``hpu_parallel`` runs sharing one recipe cache.

The first run is a scenario of the session's two-rank launch (``two_device_run.py``); the second, a fresh launch of
``recipe_cache_scenario.py`` here, must find every recipe in the cache the first one filled.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.helpers.paths import SCENARIOS
from tests.helpers.processes import free_port, scenario_environment
from tests.helpers.two_device_run import TwoDeviceRun

SCRIPT = SCENARIOS / "recipe_cache_scenario.py"


def _run(python: str, out: Path, cache: Path) -> list[int]:
    """One 2-rank run; the recipes each rank compiled."""
    env = scenario_environment(
        leave_out=("PT_HPU_RECIPE_CACHE_CONFIG",),
        LIGHTNING_HPU_BACKEND="cpu",
        LIGHTNING_HPU_CPU_DEVICES="2",
        MASTER_PORT=str(free_port()),
    )
    out.mkdir()
    result = subprocess.run(
        [python, str(SCRIPT), str(out), str(cache)], env=env, capture_output=True, text=True, timeout=240
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return [json.loads((out / f"rank{rank}.json").read_text())["recipes"] for rank in (0, 1)]


def test_two_ranks_share_one_cache_across_two_runs(
    two_device_run: TwoDeviceRun, tmp_path: Path, python_executable: str
) -> None:
    cache = two_device_run.out / "recipe_cache" / "recipes"
    first = [report["recipes"] for report in two_device_run.reports("recipe_cache")]
    assert sum(first) > 0  # (a rank may load a recipe the other rank stored a moment before)
    assert _run(python_executable, tmp_path / "second", cache) == [0, 0]
    assert not list(cache.glob(".*.tmp"))  # every recipe was written whole, with both ranks writing
