"""The session's one launch of ``two_device_scenario.py``, whose scenario reports several test files check.

Tests take the ``two_device_run`` fixture (``conftest.py``); under ``pytest -n`` they all go to one worker (their
``xdist_group``), so the launch happens once per session either way.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.helpers.paths import SCENARIOS
from tests.helpers.processes import free_port, scenario_environment

SCRIPT = SCENARIOS / "two_device_scenario.py"
#: The scenarios of the launch; ``fabric`` runs DeepSpeed, so it is left out where DeepSpeed is not installed.
#: ``sharded`` sets one thread per process and ``recipe_cache`` sets a recipe cache for the process: they come last.
SCENARIOS = [
    "compile",
    "bucketing",
    *(["fabric"] if importlib.util.find_spec("deepspeed") else []),
    "context_parallel",
    "streams",
    "fsdp_compile",
    "sharded",
    "recipe_cache",
]


@dataclass(frozen=True)
class TwoDeviceRun:
    out: Path
    returncode: int
    output: str
    namespace: str = "lightning"

    def package(self, module: str) -> str:
        """lightning-hpu's module ``module`` (``lightning_hpu.x``) as this run's namespace names it."""
        return (
            module.replace("lightning_hpu.", "lightning_hpu.standalone.", 1)
            if self.namespace != "lightning"
            else module
        )

    def reports(self, scenario: str) -> list[dict[str, Any]]:
        """Rank 0's and rank 1's report of ``scenario``; a failed launch fails the asking test with its output."""
        assert self.returncode == 0, f"{SCRIPT.name} {' '.join(SCENARIOS)} failed:\n{self.output[-6000:]}"
        return [json.loads((self.out / scenario / f"rank{rank}.json").read_text()) for rank in (0, 1)]


def launch(out: Path, python: str = sys.executable, namespace: str = "lightning") -> TwoDeviceRun:
    """Runs every scenario on 2 stand-in HPUs (eager mode, no launcher variables inherited, a port of its own),
    against ``lightning`` or the standalone packages (``namespace``, ``namespaces.py``)."""
    env = scenario_environment(
        leave_out=("PT_HPU_LAZY_MODE", "DS_ACCELERATOR"),
        LIGHTNING_HPU_BACKEND="cpu",
        LIGHTNING_HPU_CPU_DEVICES="2",
        MASTER_PORT=str(free_port()),
        LIGHTNING_HPU_TEST_NAMESPACE=namespace,
    )
    done = subprocess.run(
        [python, str(SCRIPT), str(out), *SCENARIOS],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=540,
    )
    return TwoDeviceRun(out, done.returncode, done.stdout, namespace)
