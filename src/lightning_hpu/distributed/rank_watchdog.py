"""No rank left behind: when one rank of a job fails or stalls, every rank of the job exits, and says why.

A collective that one rank never joins makes the others fail after the strategy's ``timeout``, but the stalled rank
itself would stay alive, holding its HPU for the next job on the node. Launchers do not cover every case:
Lightning's own launcher leaves ranks 1..n-1 running when rank 0 raises (its child observer dies with rank 0),
and a rank on another node has no launcher in common with the failing one.

:class:`RankWatchdog` uses the job's own rendezvous store (the TCP store at ``MASTER_ADDR:MASTER_PORT`` that every
launcher provides: rank 0's, or ``torchrun``'s agent's) from a daemon thread of each rank:

* every ``poll_seconds`` it publishes what the main thread is doing (``"training step 4"``, set by
  :meth:`RankWatchdog.note`, a plain attribute write: nothing touches the device or the network per step) and
  checks the job's abort key;
* a rank whose run fails writes a report and the abort key (:meth:`RankWatchdog.abort`). When the failure is a
  collective that timed out, it first waits a moment for the other ranks' reports: the ranks that did not time out
  and whose activity has not changed are the ones that stalled, and the reason names them;
* a rank that sees the abort key prints one line with the reason and exits at once (``os._exit``, status
  :data:`ABORTED_EXIT_CODE`) wherever its main thread is, stalled in Python or blocked in a collective.

Processes that Lightning's launcher starts are also tied to the process that started them
(:func:`follow_launcher`): they get ``SIGKILL`` when it exits, however it exits; how they learn its pid is
:mod:`lightning_hpu.distributed.launched_ranks`. The strategy mixin both trees share
(:mod:`lightning_hpu.distributed.rank_watchdog_hooks`) starts the watchdog and tells it what the rank does.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import torch.distributed as dist
from lightning.fabric.utilities.distributed import _distributed_is_initialized
from lightning.fabric.utilities.rank_zero import rank_zero_warn

from lightning_hpu.runtime.settings import LAUNCHER_PID_ENV as LAUNCHER_PID_ENV  # tests set it through this module
from lightning_hpu.runtime.settings import launcher_pid

_T = TypeVar("_T")

#: Exit status of a rank stopped because another rank of its job failed.
ABORTED_EXIT_CODE = 1

#: How long a rank whose collective timed out (or lost its peers) may take to exit after its error: its process group
#: may still hold collectives that would each wait out the timeout again while the interpreter shuts down.
BROKEN_JOB_EXIT_GRACE_S = 15

_PR_SET_PDEATHSIG = 1

#: Phrases of a collective that gave up waiting (gloo, HCCL, the store): the failure that a stalled rank causes.
_TIMEOUT_PHRASES = ("timed out", "timeout")
#: ... and of a collective whose peer went away (killed, crashed).
_LOST_CONNECTION_PHRASES = ("connection reset", "connection closed", "broken pipe", "connection refused")

#: How long a failing rank waits for the others' reports before it names the ranks that sent none.
_DIAGNOSIS_SECONDS = 3.0
#: A rank whose heartbeat is older than this at that point is gone, not stalled.
_SILENCE_SECONDS = 2.0


def follow_launcher(launcher: int | None = None) -> None:
    """In a rank started by Lightning's launcher (pid ``launcher``, by default ``LIGHTNING_HPU_LAUNCHER_PID``), die
    with the launching process (Linux ``PR_SET_PDEATHSIG``).

    Does nothing in the launching process itself, in a process whose parent is not that launcher (a job started
    later by it, which inherited the variable), or off Linux. If the launcher has already gone, the rank exits now.
    """
    if launcher is None:
        launcher = launcher_pid()
    if launcher is None or launcher == os.getpid() or not sys.platform.startswith("linux"):
        return
    if os.getppid() != launcher:
        if not _running(launcher):
            _leave(f"the process that launched it (pid {launcher}) has exited", os.environ.get("LOCAL_RANK", "?"))
        return  # started by someone else
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != launcher:  # it exited before the signal was armed
        _leave(f"the process that launched it (pid {launcher}) has exited", os.environ.get("LOCAL_RANK", "?"))


def _leave(reason: str, rank: int | str = "?") -> None:
    sys.stderr.write(f"lightning-hpu: rank {rank} stops: {reason}\n")
    sys.stderr.flush()
    os._exit(ABORTED_EXIT_CODE)


def _exit_within(seconds: int) -> None:
    """Have the kernel end this process (SIGALRM) if it is still alive ``seconds`` from now.

    For a rank whose job broke (a collective timed out, peers gone): its error is reported and the job stops, but
    the interpreter's shutdown may wait on the broken process group's remaining collectives, each up to the timeout.
    An alarm works wherever the process is then, shutdown included, where no Python thread runs any more.
    """
    if hasattr(signal, "alarm") and threading.current_thread() is threading.main_thread():
        signal.alarm(seconds)


def _wait_for_children(seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and _child_pids():
        time.sleep(0.1)


def _child_pids() -> list[int]:
    """The live child processes of this one (Linux ``/proc``; none elsewhere)."""
    children: list[int] = []
    for task in Path("/proc/self/task").glob("*/children"):
        with contextlib.suppress(OSError):
            children += [int(pid) for pid in task.read_text().split() if _running(int(pid))]
    return children


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def is_lost_connection(error: BaseException) -> bool:
    """Whether ``error`` is a collective that lost its connection to a rank (which died, or closed its end)."""
    text = str(error).lower()
    return any(phrase in text for phrase in _LOST_CONNECTION_PHRASES)


def is_collective_timeout(error: BaseException) -> bool:
    """Whether ``error`` is a collective (or the store) giving up on a rank that did not answer."""
    text = str(error).lower()
    return any(phrase in text for phrase in _TIMEOUT_PHRASES)


class _Activity(NamedTuple):
    what: str  # what the rank's main thread is doing
    since: float  # when it started that (wall clock)
    beat: float  # the rank's last heartbeat (wall clock)


class RankWatchdog:
    """Watches the job's store for an abort from any rank; publishes this rank's activity. See the module doc."""

    def __init__(
        self,
        host: str,
        port: int,
        rank: int,
        world_size: int,
        job: str,
        timeout: timedelta,
        poll_seconds: float = 0.5,
        launched_ranks: bool = False,
    ) -> None:
        self.rank = rank
        #: Whether this process started the job's other ranks (which die with it: it lets theirs finish first).
        self.launched_ranks = launched_ranks
        self.world_size = world_size
        self.timeout = timeout
        self.poll_seconds = poll_seconds
        self._prefix = f"lightning_hpu/watchdog/{job}/"
        self._store = dist.TCPStore(host, port, is_master=False, timeout=timedelta(seconds=10), wait_for_workers=False)
        self._activity = "setting up"
        self._activity_since = time.time()
        self._aborting = False
        self._stop = threading.Event()
        self._lock = threading.Lock()  # one store request at a time from this process
        self._thread = threading.Thread(target=self._watch, name="lightning-hpu-rank-watchdog", daemon=True)
        self._thread.start()
        # Stopped before the interpreter shuts down: a daemon thread inside a store request then aborts the process.
        atexit.register(self.close, timeout=12.0)

    def note(self, activity: str) -> None:
        """Record what the main thread starts doing now (published by the watchdog thread)."""
        self._activity = activity
        self._activity_since = time.time()

    def abort(self, error: BaseException) -> str:
        """Tell every rank of the job to stop because of ``error`` on this rank; return the reason they are given.

        Waits (a few seconds at most) until every rank has seen the abort, so that the store, which may live in this
        process, outlasts their reading it.
        """
        self._aborting = True
        lines = str(error).strip().splitlines()
        failure = f"{type(error).__name__}: {lines[0] if lines else ''}"
        reason = f"rank {self.rank} failed in {self._activity} ({failure})"
        with contextlib.suppress(Exception):
            self._request(lambda: self._store.set(self._key(f"failed/{self.rank}"), failure))
            if is_collective_timeout(error) or is_lost_connection(error):
                reason = self._diagnosis(failure, timed_out=is_collective_timeout(error)) or reason
            proposal = json.dumps({"from": self.rank, "reason": reason})
            first = self._request(lambda: self._store.compare_set(self._key("abort"), "", proposal))
            reason = json.loads(first)["reason"]
            self._acknowledge()
            self._wait_for_acknowledgements()
        if is_collective_timeout(error) or is_lost_connection(error):
            _exit_within(BROKEN_JOB_EXIT_GRACE_S)
        return reason

    def close(self, timeout: float | None = None) -> None:
        """Stop watching (at the end of a run, and at exit): the job's store may go away from now on."""
        self._stop.set()
        self._thread.join(timeout=5 * self.poll_seconds if timeout is None else timeout)
        atexit.unregister(self.close)

    def _diagnosis(self, failure: str, timed_out: bool) -> str | None:
        """Name the ranks that did not report this failure: stalled ones (alive, but never joined the collective
        the others waited in) and gone ones (no sign of life: killed, or crashed without a word)."""
        deadline = time.monotonic() + _DIAGNOSIS_SECONDS
        failed: set[int] = set()
        while time.monotonic() < deadline:
            failed = {rank for rank in range(self.world_size) if self._reported_failure(rank)}
            if len(failed) == self.world_size:
                return None
            time.sleep(self.poll_seconds / 2)
        now = time.time()
        stalled, gone = [], []
        for rank in (rank for rank in range(self.world_size) if rank not in failed):
            activity = self._read_activity(rank)
            if activity is None:
                gone.append(f"rank {rank} is gone (it never reported)")
            elif now - activity.beat > _SILENCE_SECONDS:
                gone.append(
                    f"rank {rank} is gone (no sign of life for {now - activity.beat:.0f} s, last in {activity.what})"
                )
            else:
                stalled.append(f"rank {rank} stalled (in {activity.what}, for {now - activity.since:.0f} s)")
        if not stalled and not gone:
            return None
        if timed_out:
            waited = f"waited {self.timeout.total_seconds():.0f} s (the strategy's timeout) in {self._activity}"
            outcome = f"rank {self.rank} {waited} for a collective it did not join ({failure})"
        else:
            outcome = f"rank {self.rank} lost it in {self._activity} ({failure})"
        return f"{' and '.join(stalled + gone)}: {outcome}"

    def _reported_failure(self, rank: int) -> bool:
        return self._request(lambda: self._has(f"failed/{rank}"))

    def _read_activity(self, rank: int) -> _Activity | None:
        key = f"activity/{rank}"
        if not self._request(lambda: self._has(key)):
            return None
        data = json.loads(self._request(lambda: self._store.get(self._key(key))))
        return _Activity(str(data["activity"]), float(data["since"]), float(data["beat"]))

    def _watch(self) -> None:
        while True:  # a first heartbeat at once, then one per poll
            try:
                if not self._aborting and self._request(lambda: self._has("abort")):
                    abort = json.loads(self._request(lambda: self._store.get(self._key("abort"))))
                    self._acknowledge()
                    if self.launched_ranks:  # a failing one prints its error before it dies with this process
                        _wait_for_children(seconds=5.0)
                    _leave(abort["reason"], self.rank)
                    return
                self._publish_activity()
            except Exception:  # the store's host exited: nothing more to learn from it
                return
            if self._stop.wait(self.poll_seconds):
                return

    def _acknowledge(self) -> None:
        self._request(lambda: self._store.add(self._key("acknowledged"), 1))

    def _wait_for_acknowledgements(self) -> None:
        deadline = time.monotonic() + 4 * self.poll_seconds + 2.0
        while time.monotonic() < deadline:
            if self._request(lambda: self._store.add(self._key("acknowledged"), 0)) >= self.world_size:
                return
            time.sleep(self.poll_seconds / 4)

    def _publish_activity(self) -> None:
        """What the main thread does, and a heartbeat: the store hears from every live rank at every poll."""
        payload = json.dumps({"activity": self._activity, "since": self._activity_since, "beat": time.time()})
        self._request(lambda: self._store.set(self._key(f"activity/{self.rank}"), payload))

    def _has(self, key: str) -> bool:
        return bool(self._store.check([self._key(key)]))

    def _key(self, name: str) -> str:
        return self._prefix + name

    def _request(self, call: Callable[[], _T]) -> _T:
        with self._lock:
            return call()


def report_abort(watchdog: RankWatchdog, rank: int, error: BaseException) -> str:
    """Tell the job's ranks to stop because of ``error``, and say so on this rank's stderr; the reason."""
    reason = watchdog.abort(error)
    sys.stderr.write(f"lightning-hpu: rank {rank} failed; the job stops: {reason}\n")
    sys.stderr.flush()
    return reason


def watch_job_of(strategy: Any) -> RankWatchdog | None:
    """A watchdog for ``strategy``'s job once its process group exists and it runs several ranks, else ``None``."""
    if strategy.world_size > 1 and _distributed_is_initialized():
        launched = getattr(strategy, "_launcher_pid", None) == os.getpid()  # rank 0 of Lightning's script launcher
        return start_watchdog(strategy.global_rank, strategy.world_size, getattr(strategy, "_timeout", None), launched)
    return None


def start_watchdog(
    rank: int, world_size: int, timeout: timedelta | None, launched_ranks: bool = False
) -> RankWatchdog | None:
    """A watchdog on the store of the job's process group (``MASTER_ADDR:MASTER_PORT``, which Lightning and every
    launcher set); ``None``, with a warning, if that store cannot be reached (the run goes on unwatched)."""
    try:
        return RankWatchdog(
            os.environ["MASTER_ADDR"],
            int(os.environ["MASTER_PORT"]),
            rank,
            world_size,
            job=job_name(),
            timeout=timeout or timedelta(minutes=30),
            launched_ranks=launched_ranks,
        )
    except (KeyError, ValueError, RuntimeError) as error:
        rank_zero_warn(f"lightning-hpu: no rank watchdog for this run (the job's store is not reachable: {error}).")
        return None


def job_name() -> str:
    """This attempt of this job: ``torchrun`` keeps its store across restarts, so keys must not carry over."""
    return f"{os.environ.get('TORCHELASTIC_RUN_ID', 'run')}-{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}"
