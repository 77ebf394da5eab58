""" "No rank left behind", written once for the Trainer and Fabric: the job's watchdog
(:mod:`lightning_hpu.distributed.rank_watchdog`) starts with the process group, and a rank's failure stops every rank.

:class:`RankWatchdogHooks` is part of every HPU parallel strategy of both sides, through their HCCL mixins
(:mod:`lightning_hpu.fabric.strategies.hccl`, :mod:`lightning_hpu.pytorch.strategies.hccl`). Fabric has no exception
hook of its own, so there a rank's uncaught exception is reported to the watchdog
(:func:`abort_on_uncaught_exception`); the Trainer reports it from its strategy's ``on_exception``.
"""

from __future__ import annotations

import sys
from typing import Any

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


def abort_on_uncaught_exception(watchdog: RankWatchdog, rank: int) -> None:
    """The rank's uncaught exception tells the other ranks to stop, then is reported as usual."""
    previous = sys.excepthook

    def abort_then_report(kind: type[BaseException], error: BaseException, traceback: Any) -> None:
        if not isinstance(error, KeyboardInterrupt):
            report_abort(watchdog, rank, error)
        previous(kind, error, traceback)

    sys.excepthook = abort_then_report
