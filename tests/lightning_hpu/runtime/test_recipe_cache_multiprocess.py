"""Recipes kept across runs by the ranks of a node: two 2-rank ``hpu_parallel`` runs sharing one recipe cache.

The first run is a scenario of the session's two-rank launch (``two_device_run.py``); the second, a fresh launch of
``recipe_cache_scenario.py`` here, must find every recipe in the cache the first one filled.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

from tests.helpers.paths import ROOT, SCENARIOS
from tests.helpers.two_device_run import TwoDeviceRun

SCRIPT = SCENARIOS / "recipe_cache_scenario.py"
_LAUNCH_VARIABLES = ("MASTER_ADDR", "MASTER_PORT", "NODE_RANK", "WORLD_SIZE", "LOCAL_RANK", "RANK", "GROUP_RANK")


def _run(python: str, out: Path, cache: Path) -> list[int]:
    """One 2-rank run; the recipes each rank compiled."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in _LAUNCH_VARIABLES and key != "PT_HPU_RECIPE_CACHE_CONFIG"
    }
    env.update(
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "src"), str(ROOT), env.get("PYTHONPATH")])),
        LIGHTNING_HPU_BACKEND="cpu",
        LIGHTNING_HPU_CPU_DEVICES="2",
        MASTER_PORT=str(port),
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
