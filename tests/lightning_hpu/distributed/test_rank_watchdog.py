"""The rank watchdog in one process: three ranks' watchdogs on one store, one failing, one stalled, one gone.

The multi-process behaviour (every process of a job exits, under each launcher) is in ``test_launchers.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import timedelta
from typing import Any

import pytest
import torch.distributed as dist

from lightning_hpu.distributed import rank_watchdog
from lightning_hpu.distributed.rank_watchdog import RankWatchdog, is_collective_timeout, is_lost_connection
from tests.helpers.fresh_start import fresh_start, in_fresh_start_group

TIMEOUT = timedelta(seconds=20)


@pytest.fixture
def store() -> Any:
    master = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)
    yield master


@pytest.fixture
def left(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int | str, str]]:
    """Ranks that the watchdog told to go (instead of ending this process)."""
    departures: list[tuple[int | str, str]] = []
    monkeypatch.setattr(rank_watchdog, "_leave", lambda reason, rank="?": departures.append((rank, reason)))
    return departures


@pytest.fixture
def exit_deadlines(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The exit deadlines a failing rank set itself (instead of arming this process's alarm)."""
    deadlines: list[int] = []
    monkeypatch.setattr(rank_watchdog, "_exit_within", deadlines.append)
    return deadlines


def _watchdog(store: Any, rank: int, job: str) -> RankWatchdog:
    return RankWatchdog("127.0.0.1", store.port, rank, world_size=3, job=job, timeout=TIMEOUT, poll_seconds=0.1)


def _gone_rank(store: Any, job: str, rank: int, seconds_ago: float) -> None:
    """A rank that published once, then died (no more heartbeats)."""
    then = time.time() - seconds_ago
    payload = {"activity": "training step 3", "since": then, "beat": then}
    store.set(f"lightning_hpu/watchdog/{job}/activity/{rank}", json.dumps(payload))


def test_a_timeout_names_the_stalled_and_the_gone_ranks_and_stops_the_others(
    store: Any, left: list[tuple[int | str, str]], exit_deadlines: list[int]
) -> None:
    failing, stalled = _watchdog(store, 0, "a"), _watchdog(store, 1, "a")
    _gone_rank(store, "a", 2, seconds_ago=10)
    failing.note("training step 3")
    stalled.note("training step 3")
    time.sleep(0.3)  # a heartbeat or two
    reason = failing.abort(RuntimeError("[gloo] Timed out waiting 20000ms for recv operation to complete"))
    assert reason.startswith("rank 1 stalled (in training step 3, for ")
    assert "rank 2 is gone (no sign of life for 1" in reason
    assert "rank 0 waited 20 s (the strategy's timeout) in training step 3 for a collective it did not join" in reason
    deadline = time.monotonic() + 5
    while not left and time.monotonic() < deadline:
        time.sleep(0.05)
    failing.close()
    stalled.close()
    assert left == [(1, reason)]  # the stalled rank was told to go, with the reason; the failing rank was not
    # The failing rank's job is broken: it must be gone soon even if shutting down waits on the broken group.
    assert exit_deadlines == [rank_watchdog.BROKEN_JOB_EXIT_GRACE_S]


def test_the_first_reason_wins_and_a_plain_failure_names_its_rank(
    store: Any, left: list[tuple[int | str, str]], exit_deadlines: list[int]
) -> None:
    first, second, third = _watchdog(store, 0, "b"), _watchdog(store, 1, "b"), _watchdog(store, 2, "b")
    second.note("validation step 2")
    time.sleep(0.2)
    reason = second.abort(ValueError("rank 1's data shard is missing\nsecond line"))
    assert reason == "rank 1 failed in validation step 2 (ValueError: rank 1's data shard is missing)"
    for watchdog in (first, second, third):
        watchdog.close()
    # Rank 1 waited until both others had read the reason; each was told to go.
    assert sorted(left) == [(0, reason), (2, reason)]
    # A rank that fails later (its own collective broke meanwhile) does not replace the first reason.
    late = _watchdog(store, 0, "b")
    assert late.abort(RuntimeError("something else")) == reason
    late.close()
    assert exit_deadlines == []  # a plain failure leaves a working group: the process exits as usual


def test_failures_are_classified_from_the_collectives_words() -> None:
    assert is_collective_timeout(RuntimeError("Timed out waiting 20000ms for recv operation to complete"))
    assert is_lost_connection(RuntimeError("Read error [127.0.0.1]:5009: Connection reset by peer"))
    assert not is_collective_timeout(ValueError("bad batch")) and not is_lost_connection(ValueError("bad batch"))


def test_only_a_rank_of_a_living_launcher_that_is_its_parent_follows_it(
    monkeypatch: pytest.MonkeyPatch, left: list[tuple[int | str, str]]
) -> None:
    """A variable inherited by an unrelated job (torchrun started from a notebook that ran a Trainer) is ignored."""
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        monkeypatch.setenv(rank_watchdog.LAUNCHER_PID_ENV, str(other.pid))  # alive, but not this process's parent
        rank_watchdog.follow_launcher()
        assert left == []
    finally:
        other.kill()
        other.wait()
    rank_watchdog.follow_launcher()  # that launcher is gone now: a rank it started must not go on alone
    assert left == [("?", f"the process that launched it (pid {other.pid}) has exited")]


@pytest.mark.multiprocess
@in_fresh_start_group
def test_a_process_exits_cleanly_with_its_watchdogs_still_watching() -> None:
    """Fabric has no teardown: its watchdog watches until the process exits. A watchdog thread still inside a store
    request when the interpreter shuts down aborted the process ("terminate called without an active exception");
    polling without pause keeps the threads inside requests, so that abort came every time.

    A real interpreter's exit is the point: the shared fresh start (``tests/helpers/fresh_start.py``) ends so."""
    started = fresh_start()
    assert started.section("watchdogs") == {"watchdogs": 2}
    assert (started.returncode, started.stdout.endswith("\ndone\n")) == (0, True), started.stderr[-2000:]
    assert "terminate called" not in started.stderr
