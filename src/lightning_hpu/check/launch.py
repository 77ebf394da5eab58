"""Starting a check worker (one process, or the N ranks of a launch): its rows as they come, the rest of its output
kept for a failure's detail, and no process left behind."""

from __future__ import annotations

import collections
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from lightning_hpu.check.rows import Row, parse_row
from lightning_hpu.runtime.settings import LAUNCHER_PID_ENV

WORKER_MODULE = "lightning_hpu.pytorch.check.worker"
#: Lines of a worker's other output kept for a failure's detail.
KEPT_LINES = 40


@dataclass
class WorkerRun:
    """What a worker did: its rows, exit status, whether it was killed for overrunning, its last lines."""

    rows: list[Row] = field(default_factory=list)
    returncode: int = 0
    timed_out: bool = False
    tail: list[str] = field(default_factory=list)

    def failure(self) -> str:
        """One line on why the worker stopped early ("" when it exited cleanly)."""
        if self.timed_out:
            return "the worker overran its time and was killed"
        if self.returncode:
            last = next((line for line in reversed(self.tail) if line.strip()), "")
            return f"the worker exited with status {self.returncode}: {last.strip()}"
        return ""


def _kill_group(process: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # nothing left of it
        os.killpg(process.pid, signal.SIGKILL)


def rank_environments(env: dict[str, str], ranks: int) -> list[dict[str, str]]:
    """The environment of each of ``ranks`` ranks started at once, as torchrun starts them (Lightning sees
    ``LOCAL_RANK`` and runs each process as one rank): all import Lightning together instead of one after another.
    They die with this process (``LIGHTNING_HPU_LAUNCHER_PID``, :mod:`lightning_hpu.distributed.rank_watchdog`)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = str(probe.getsockname()[1])
    shared = {**env, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port, "NODE_RANK": "0", "WORLD_SIZE": str(ranks)}
    shared[LAUNCHER_PID_ENV] = str(os.getpid())
    return [{**shared, "LOCAL_RANK": str(rank), "RANK": str(rank)} for rank in range(ranks)]


class Worker:
    """Worker processes (one, or the ranks of a launch) started now, each read on a thread of its own: ``on_row``
    gets each row as it arrives.

    Every process runs in a session of its own, whose process group is killed when the worker overruns
    ``timeout`` seconds, after it exits (anything it left running) and on :meth:`kill` (the command interrupted).
    """

    def __init__(
        self, arguments: Sequence[str], envs: Sequence[dict[str, str]], timeout: float, on_row: Callable[[Row], None]
    ) -> None:
        self.run = WorkerRun()
        self._on_row = on_row
        self._tail: collections.deque[str] = collections.deque(maxlen=KEPT_LINES)
        self._processes = [
            subprocess.Popen(
                [sys.executable, "-m", WORKER_MODULE, *arguments],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=True,
            )
            for env in envs
        ]
        self._timer = threading.Timer(timeout, self._overrun)
        self._timer.daemon = True
        self._timer.start()
        self._readers = [threading.Thread(target=self._read, args=(p,), daemon=True) for p in self._processes]
        for reader in self._readers:
            reader.start()

    def _overrun(self) -> None:
        self.run.timed_out = True
        self.kill()

    def _read(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            row = parse_row(line)
            if row is None:
                self._tail.append(line.rstrip("\n"))
            else:
                self.run.rows.append(row)
                self._on_row(row)
        returncode = process.wait()
        self.run.returncode = self.run.returncode or returncode

    def kill(self) -> None:
        """Kill every process of the worker and everything they started (their sessions' process groups)."""
        for process in self._processes:
            _kill_group(process)

    def join(self) -> WorkerRun:
        """Wait for the worker to finish (or be killed); nothing it started is left running."""
        for reader in self._readers:
            reader.join()
        self._timer.cancel()
        self.kill()
        for process in self._processes:
            process.wait()
        self.run.tail = list(self._tail)
        return self.run
