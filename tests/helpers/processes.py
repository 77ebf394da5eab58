"""The processes tests start: their environment (no launch inherited, the package and the tests importable), a free
port, and whether a child still runs."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

from tests.helpers.paths import ROOT, SCENARIOS, SRC

#: What a launch writes into a rank's environment: a child started by a test must not inherit the test's own.
LAUNCH_VARIABLES = (
    "MASTER_ADDR",
    "MASTER_PORT",
    "NODE_RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "RANK",
    "GROUP_RANK",
    "LOCAL_WORLD_SIZE",
)


_PORTS_GIVEN: set[int] = set()


def free_port() -> int:
    """A TCP port nobody listens on now, for a launch's rendezvous; never one this process handed out before (the
    jobs of a test may start side by side)."""
    while True:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if port not in _PORTS_GIVEN:
            _PORTS_GIVEN.add(port)
            return port


def scenario_environment(*, leave_out: tuple[str, ...] = (), **settings: str) -> dict[str, str]:
    """This process's environment for a child that runs a scenario: without any launch's variables (and the
    variables ``leave_out`` names or starts with), with ``src/`` and the repository on ``PYTHONPATH`` (a scenario
    imports ``tests.helpers``), then ``settings``."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in LAUNCH_VARIABLES and not (leave_out and key.startswith(leave_out))
    }
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), str(ROOT), env.get("PYTHONPATH")]))
    env.update(settings)
    return env


def alive(pid: int) -> bool:
    """Whether ``pid`` runs: it exists and is not a zombie. A process that is gone, or is reaped while its state is
    read (the read then fails with ``ESRCH``), is not alive."""
    try:
        # The state follows the command name, which is in parentheses and may itself hold spaces or parentheses.
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


def run_until_ok(python: str, script: str, *arguments: str) -> None:
    """Runs ``tests/scenarios/<script>`` on the stand-in; it must exit 0 with ``ok`` as its last output (its output
    is the failure's message otherwise)."""
    result = subprocess.run(
        [python, str(SCENARIOS / script), *arguments],
        env={**os.environ, "LIGHTNING_HPU_BACKEND": "cpu"},
        capture_output=True,
        text=True,
        timeout=240,
    )
    output = result.stdout[-2000:] + result.stderr[-2000:]
    assert result.returncode == 0 and result.stdout.strip().endswith("ok"), output
