""" "No rank left behind", written once for the Trainer and Fabric: the job's watchdog
(:mod:`lightning_hpu.distributed.rank_watchdog`) starts with the process group, and a rank's failure stops every rank.

:class:`RankWatchdogHooks` is part of every HPU parallel strategy of both sides, through their HCCL mixins
(:mod:`lightning_hpu.fabric.strategies.hccl`, :mod:`lightning_hpu.pytorch.strategies.hccl`). Fabric has no exception
hook of its own, so there a rank's uncaught exception is reported to the watchdog (:class:`UncaughtExceptionAbort`);
the Trainer reports it from its strategy's ``on_exception``.

What a run starts it stops: the watchdog's thread and the exception hook end with the run. The Trainer calls the
strategy's ``teardown``; Lightning's Fabric never does, so a Fabric run ends at the first of its strategy's
``teardown``, the strategy's collection with its Fabric, the next run's start in the process, or the interpreter's
exit (:func:`stop_with_run`).
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable
from types import TracebackType

from typing_extensions import override

from lightning_hpu.distributed.launched_ranks import follow_if_lightning_launched, mark_or_follow_launcher
from lightning_hpu.distributed.rank_watchdog import RankWatchdog, report_abort, watch_job_of
from lightning_hpu.distributed.strategy_methods import StrategyMethods


class RankWatchdogHooks(StrategyMethods):
    """Strategy mixin (Trainer and Fabric): the job's ranks exit together (:class:`RankWatchdog`, launcher
    following). Mix it in before Lightning's ``ParallelStrategy``."""

    _watchdog: RankWatchdog | None = None
    #: The pid of the process that launched this job's ranks (:mod:`lightning_hpu.distributed.launched_ranks`).
    _launcher_pid: int | None = None
    #: The launchers of this side (Trainer or Fabric) that start the ranks of a job from this process.
    rank_launchers: tuple[type, ...] = ()

    @override
    def _configure_launcher(self) -> None:
        super()._configure_launcher()
        mark_or_follow_launcher(self, self.rank_launchers)

    @override
    def setup_environment(self) -> None:
        follow_if_lightning_launched(self)
        super().setup_environment()
        self.start_rank_watchdog()

    def start_rank_watchdog(self) -> None:
        """Watch this job's ranks, once the process group exists: at the end of :meth:`setup_environment`'s chain,
        which every HPU parallel strategy runs whole (``tests/lightning_hpu/distributed/test_strategy_pieces.py``)."""
        if self._watchdog is None:
            self._watchdog = watch_job_of(self)

    def stop_rank_watchdog(self) -> None:
        """Stop this run's watchdog (its thread ends): the run is over."""
        if self._watchdog is not None:
            self._watchdog.close()
            self._watchdog = None

    @override
    def teardown(self) -> None:
        self.stop_rank_watchdog()
        super().teardown()


class UncaughtExceptionAbort:
    """``sys.excepthook`` during a run: the rank's uncaught exception tells the other ranks to stop, then the hook it
    replaced reports it as usual. :meth:`remove` ends that (:func:`stop_with_run`)."""

    def __init__(self, watchdog: RankWatchdog, rank: int) -> None:
        self.watchdog: RankWatchdog | None = watchdog
        self.rank = rank
        self.previous = sys.excepthook
        #: Ends the run this hook belongs to (set by :func:`stop_with_run`): the next run's start calls it.
        self.end_run: Callable[[], object] | None = None

    def __call__(self, kind: type[BaseException], error: BaseException, traceback: TracebackType | None) -> None:
        if self.watchdog is not None and not isinstance(error, KeyboardInterrupt):
            report_abort(self.watchdog, self.rank, error)
        self.previous(kind, error, traceback)

    def remove(self) -> None:
        """Report no more; give ``sys.excepthook`` back (unless a hook set since then wraps this one, which then only
        passes exceptions on)."""
        self.watchdog = None
        if sys.excepthook is self:
            sys.excepthook = self.previous


def stop_with_run(owner: object, watchdog: RankWatchdog, rank: int) -> Callable[[], object]:
    """Report ``rank``'s uncaught exceptions to ``watchdog`` (:class:`UncaughtExceptionAbort`) until the run of
    ``owner`` (a Fabric strategy) ends; return the call that ends it.

    The run ends, its watchdog closed and ``sys.excepthook`` given back, at the first of: that call (the strategy's
    ``teardown``), ``owner``'s collection (a Fabric and its strategy dropped), the next run's start in this process
    (the hook of ours it finds ends the run before), and the interpreter's exit.
    """
    earlier = getattr(sys.excepthook, "end_run", None)
    if isinstance(sys.excepthook, UncaughtExceptionAbort) and callable(earlier):
        earlier()
    hook = UncaughtExceptionAbort(watchdog, rank)
    end_run = weakref.finalize(owner, _end_run, watchdog, hook)  # holds no reference to ``owner``
    hook.end_run = end_run
    sys.excepthook = hook
    return end_run


def _end_run(watchdog: RankWatchdog, hook: UncaughtExceptionAbort) -> None:
    hook.remove()
    watchdog.close()
