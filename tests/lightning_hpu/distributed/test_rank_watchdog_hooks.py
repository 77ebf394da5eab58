"""What a run starts it stops, on Fabric as on the Trainer: the rank watchdog's thread, ``sys.excepthook``, signals.

Lightning's Fabric never calls ``strategy.teardown()``; a Fabric run ends when its strategy is dropped, when the next
run starts in the process, or at its teardown (:func:`stop_with_run`). In one process here with stand-in watchdogs;
then every parallel strategy of both trees, three runs each on two stand-in HPUs, in one launch
(``run_end_scenario.py``).
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from typing import Any

import pytest

from lightning_hpu.distributed.rank_watchdog_hooks import UncaughtExceptionAbort, stop_with_run
from tests.helpers.paths import SCENARIOS
from tests.helpers.processes import free_port, scenario_environment


class Watchdog:
    """A stand-in :class:`RankWatchdog`: what was reported, and whether it was closed."""

    def __init__(self) -> None:
        self.closed = False
        self.reports: list[BaseException] = []

    def abort(self, error: BaseException) -> str:
        self.reports.append(error)
        return "stopped"

    def close(self, timeout: float | None = None) -> None:
        self.closed = True


class Strategy:
    """What owns a run: a Fabric's strategy."""


@pytest.fixture
def hook_before(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A plain ``sys.excepthook`` that records, restored after the test whatever it did."""
    seen: list[BaseException] = []

    def plain(kind: type[BaseException], error: BaseException, traceback: Any) -> None:
        seen.append(error)

    monkeypatch.setattr(sys, "excepthook", plain)
    plain.seen = seen  # type: ignore[attr-defined]
    return plain


def test_an_uncaught_exception_stops_the_job_then_is_reported_as_before(hook_before: Any) -> None:
    watchdog, strategy = Watchdog(), Strategy()
    end_run = stop_with_run(strategy, watchdog, rank=1)  # type: ignore[arg-type]
    error = RuntimeError("boom")
    sys.excepthook(RuntimeError, error, None)
    assert watchdog.reports == [error] and hook_before.seen == [error]
    sys.excepthook(KeyboardInterrupt, KeyboardInterrupt(), None)  # Ctrl-C stops this rank only
    assert watchdog.reports == [error]
    end_run()
    assert sys.excepthook is hook_before and watchdog.closed


def test_a_run_ends_when_its_strategy_is_dropped(hook_before: Any) -> None:
    watchdog, strategy = Watchdog(), Strategy()
    stop_with_run(strategy, watchdog, rank=0)  # type: ignore[arg-type]
    assert isinstance(sys.excepthook, UncaughtExceptionAbort)
    del strategy
    gc.collect()
    assert sys.excepthook is hook_before and watchdog.closed


def test_the_next_run_ends_the_one_before(hook_before: Any) -> None:
    strategies = [Strategy() for _ in range(3)]  # kept alive: the program still holds its Fabrics
    watchdogs = [Watchdog() for _ in strategies]
    for strategy, watchdog in zip(strategies, watchdogs, strict=True):
        stop_with_run(strategy, watchdog, rank=0)  # type: ignore[arg-type]
    assert [watchdog.closed for watchdog in watchdogs] == [True, True, False]
    hook = sys.excepthook
    assert isinstance(hook, UncaughtExceptionAbort) and hook.previous is hook_before  # one hook, not three chained
    del strategies, strategy
    gc.collect()
    assert sys.excepthook is hook_before and watchdogs[-1].closed


def test_a_hook_set_after_ours_stays_and_ours_goes_quiet(hook_before: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    watchdog, strategy = Watchdog(), Strategy()
    end_run = stop_with_run(strategy, watchdog, rank=0)  # type: ignore[arg-type]
    ours = sys.excepthook

    def theirs(kind: type[BaseException], error: BaseException, traceback: Any) -> None:
        ours(kind, error, traceback)

    monkeypatch.setattr(sys, "excepthook", theirs)
    end_run()
    assert sys.excepthook is theirs
    error = ValueError("late")
    theirs(ValueError, error, None)
    assert watchdog.reports == [] and hook_before.seen == [error]  # passed on, not reported to a closed watchdog


#: The trees, in the order the one launch runs them.
SIDES = ("Trainer", "Fabric")


@pytest.fixture(scope="module")
def run_end_reports(tmp_path_factory: pytest.TempPathFactory, python_executable: str) -> list[dict[str, Any]]:
    """Both trees in one launch of two ranks (the Trainer's runs, then Fabric's; ``run_end_scenario.py``), in the
    preloaded Python: what a run leaves in its process is checked, not how the process starts. Each rank's report."""
    pytest.importorskip("deepspeed")
    out = tmp_path_factory.mktemp("run_end")
    env = scenario_environment(
        leave_out=("PT_HPU_LAZY_MODE", "DS_ACCELERATOR"),
        LIGHTNING_HPU_BACKEND="cpu",
        LIGHTNING_HPU_CPU_DEVICES="2",
        MASTER_PORT=str(free_port()),
    )
    done = subprocess.run(
        [python_executable, str(SCENARIOS / "run_end_scenario.py"), str(out), *SIDES],
        env=env,
        capture_output=True,
        text=True,
        timeout=540,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    return [json.loads((out / f"rank{rank}.json").read_text()) for rank in (0, 1)]


@pytest.mark.multiprocess
@pytest.mark.xdist_group("run_end_scenario")  # one worker reads the one launch (--dist loadgroup)
@pytest.mark.parametrize("side", SIDES)
def test_three_runs_of_every_parallel_strategy_leave_nothing_running(
    side: str, run_end_reports: list[dict[str, Any]]
) -> None:
    """Each rank ran the tree's four strategies three times, after the Trainer's runs for Fabric, and every run left
    what was there before the first run of the process (so a Trainer leak fails the Trainer first)."""
    for rank, whole_report in enumerate(run_end_reports):
        report = {case: runs for case, runs in whole_report.items() if case.startswith(f"{side}-")}
        assert len(report) == 4, f"rank {rank}, {side}: {sorted(whole_report)}"  # the tree's four parallel strategies
        for case, runs in report.items():
            assert len(runs) == 3, f"rank {rank}, {case}"
            for number, run in enumerate(runs, 1):
                assert run["watchdog"] and run["thread"], f"rank {rank}, {case}, run {number}: no watchdog ran"
                if side == "Fabric":
                    assert run["excepthook"] == "UncaughtExceptionAbort", f"rank {rank}, {case}, run {number}"
                assert run["left"] == [], f"rank {rank}, {case}, run {number} left: {run['left']}"
