"""The launcher's pid, given to the ranks it starts and to no one else: how a rank follows the process that launched it.

A rank that Lightning's launcher starts dies with that process (:func:`~lightning_hpu.distributed.rank_watchdog.
follow_launcher`), so it must learn the launcher's pid. Installed means present in every Lightning program, so that
pid never stays in the launching process's ``os.environ``, where every process the program starts later would inherit
it (and test suites that compare the environment after each test would fail):

* ranks that re-run the script (Lightning's ``_SubprocessScriptLauncher``) get ``LIGHTNING_HPU_LAUNCHER_PID`` in the
  environment they start with: it is in ``os.environ`` only while the launcher starts them, then as it was before;
  each rank reads it once and removes it from its own environment;
* ranks that Lightning's ``_MultiProcessingLauncher`` spawns get it with the strategy, which is pickled to them.

Since the ranks die with it, a script launcher lets them end first: at its exit it waits for the ranks it started
(:func:`let_ranks_finish`, at most :data:`RANKS_EXIT_GRACE_S`), so ranks that stop together with it (a finished run,
an agreed SIGTERM) finish their own exit, and only a rank still running after that is ended with it. (Lightning's
spawn launcher joins its ranks itself.)
"""

from __future__ import annotations

import atexit
import os
import subprocess
import time
from typing import Any

from lightning.fabric.plugins.environments import LightningEnvironment

from lightning_hpu.distributed.rank_watchdog import follow_launcher
from lightning_hpu.runtime.settings import LAUNCHER_PID_ENV, launcher_pid, variable_set


class StartChildrenWithLauncherPid:
    """A script launcher's ``_call_children_scripts``: Lightning's own, run with the launcher's pid in the environment
    the children copy (a picklable callable, not a closure, so the launcher and its strategy stay picklable)."""

    def __init__(self, launcher: Any) -> None:
        self.launcher = launcher

    def __call__(self) -> None:
        with variable_set(LAUNCHER_PID_ENV, str(os.getpid())):
            type(self.launcher)._call_children_scripts(self.launcher)
        atexit.register(let_ranks_finish, self.launcher)


#: How long a script launcher's exit waits for the ranks it started to end on their own.
RANKS_EXIT_GRACE_S = 10.0


def let_ranks_finish(launcher: Any, seconds: float = RANKS_EXIT_GRACE_S) -> None:
    """Wait until the rank processes ``launcher`` started (its ``procs``) have exited, or ``seconds`` have passed."""
    deadline = time.monotonic() + seconds
    for process in getattr(launcher, "procs", []):
        try:
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            return


def mark_or_follow_launcher(strategy: Any, launcher_types: tuple[type, ...]) -> None:
    """The process that starts ranks with Lightning's launcher (one of ``launcher_types``, the Trainer's or Fabric's)
    passes its pid to them; a rank it started follows it."""
    environment = strategy.cluster_environment
    external = environment is not None and environment.creates_processes_externally
    launcher: Any = strategy._launcher
    if not isinstance(strategy._launcher, launcher_types) or external:
        follow_if_lightning_launched(strategy)
        return
    strategy._launcher_pid = os.getpid()  # spawned ranks get it with the strategy
    if callable(getattr(type(launcher), "_call_children_scripts", None)):
        launcher._call_children_scripts = StartChildrenWithLauncherPid(launcher)


def follow_if_lightning_launched(strategy: Any) -> None:
    """Only ranks of Lightning's own launcher follow it (not those of torchrun, SLURM or MPI, say)."""
    if not isinstance(strategy.cluster_environment, LightningEnvironment):
        return
    pid = getattr(strategy, "_launcher_pid", None)
    if pid is None and LAUNCHER_PID_ENV in os.environ:
        pid = launcher_pid()
        del os.environ[LAUNCHER_PID_ENV]  # read once: the processes this rank starts are not its launcher's ranks
        strategy._launcher_pid = pid
    if pid is not None and pid != os.getpid():
        follow_launcher(pid)
