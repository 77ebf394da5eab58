"""One real, fresh Python for the tests about a program's start (``tests/scenarios/fresh_start_scenario.py``), run
once per test process and shared by the test files that read its sections.

A fresh interpreter is the point of these tests (what importing Lightning does, before anything else has), so the
preloaded one (``preloaded_python.py``) cannot serve; but each costs a core ~7 s to import torch and Lightning, and
the tests need the same start: one process checks all of them, in an order where no check sees another's work.
The tests that read it carry the ``xdist_group`` :data:`GROUP`, so that pytest-xdist runs them in one worker.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import Any

import pytest

from tests.helpers.paths import SCENARIOS
from tests.helpers.processes import scenario_environment

#: The xdist group of the tests that read the run (one run per worker that has one of them).
GROUP = pytest.mark.xdist_group("fresh_start")


@dataclass(frozen=True)
class FreshStart:
    """The run: its exit status, its output, and the JSON line it printed (``{section: facts}``)."""

    returncode: int
    stdout: str
    stderr: str
    report: dict[str, Any]

    def section(self, name: str) -> Any:
        """What the section found; a section that raised fails the test that reads it, with the traceback."""
        found = self.report.get(name)
        assert found is not None, f"the fresh start did not report {name!r}:\n{(self.stdout + self.stderr)[-4000:]}"
        assert not (isinstance(found, dict) and "error" in found), found["error"]
        return found


@functools.cache
def fresh_start() -> FreshStart:
    """Runs the scenario (once per test process) in the real interpreter, in an environment with none of the
    package's variables but ``LIGHTNING_HPU_BACKEND=cpu``."""
    env = scenario_environment(leave_out=("LIGHTNING_HPU_", "PT_HPU_", "HABANA_"), LIGHTNING_HPU_BACKEND="cpu")
    with tempfile.TemporaryDirectory(prefix="fresh_start_") as directory:
        result = subprocess.run(
            [sys.executable, str(SCENARIOS / "fresh_start_scenario.py")],
            env=env,
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=300,
        )
    lines = result.stdout.strip().splitlines()
    report: dict[str, Any] = {}
    if len(lines) >= 2 and lines[-1] == "done":
        report = json.loads(lines[-2])
    return FreshStart(result.returncode, result.stdout, result.stderr, report)
