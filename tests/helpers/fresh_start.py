"""Real, fresh Pythons for the tests about a program's start, one per start that they ask, each run once per test
process and shared by the test files that read it: :func:`fresh_start` (``tests/scenarios/fresh_start_scenario.py``,
a program on the stand-in) and :func:`cpu_program` (``tests/scenarios/cpu_program_scenario.py``, a CPU program on a
machine without HPUs, with lightning-hpu's switch on or off).

A fresh interpreter is the point of these tests (what importing Lightning does, before anything else has), so the
preloaded one (``preloaded_python.py``) cannot serve; but each costs a core ~7 s to import torch and Lightning, and
the tests need the same start: one process checks all of them, in an order where no check sees another's work.
The tests that read them are marked with :func:`in_fresh_start_group`.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest

from tests.helpers.paths import SCENARIOS
from tests.helpers.processes import scenario_environment

_Test = TypeVar("_Test", bound=Callable[..., object])


def in_fresh_start_group(test: _Test) -> _Test:
    """Marks a test that reads these runs: ``slow`` (it starts a Python), and in one xdist group, so that
    pytest-xdist runs all of them in one worker (one run of each there)."""
    return pytest.mark.slow(pytest.mark.xdist_group("fresh_start")(test))


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


#: The variables of this test process that neither run inherits: the package's, the bridge's and the stand-in's.
_LEFT_OUT = ("LIGHTNING_HPU_", "PT_HPU_", "HABANA_")


def _run_in_real_python(scenario: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Runs ``tests/scenarios/<scenario>`` in the real interpreter, in a scratch working directory."""
    with tempfile.TemporaryDirectory(prefix=scenario.removesuffix(".py") + "_") as directory:
        return subprocess.run(
            [sys.executable, str(SCENARIOS / scenario)],
            env=env,
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=300,
        )


@functools.cache
def fresh_start() -> FreshStart:
    """Runs the scenario (once per test process) in the real interpreter, in an environment with none of the
    package's variables but ``LIGHTNING_HPU_BACKEND=cpu``."""
    env = scenario_environment(leave_out=_LEFT_OUT, LIGHTNING_HPU_BACKEND="cpu")
    result = _run_in_real_python("fresh_start_scenario.py", env)
    lines = result.stdout.strip().splitlines()
    report: dict[str, Any] = {}
    if len(lines) >= 2 and lines[-1] == "done":
        report = json.loads(lines[-2])
    return FreshStart(result.returncode, result.stdout, result.stderr, report)


@functools.cache
def cpu_program(switch: str) -> dict[str, Any]:
    """The report of the CPU program (once per test process and ``switch``) in the real interpreter, in an
    environment with none of the package's variables, but ``LIGHTNING_HPU_AUTOLOAD=0`` where ``switch`` is ``off``."""
    assert switch in ("on", "off"), switch
    settings = {"LIGHTNING_HPU_AUTOLOAD": "0"} if switch == "off" else {}
    result = _run_in_real_python("cpu_program_scenario.py", scenario_environment(leave_out=_LEFT_OUT, **settings))
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    report: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return report
