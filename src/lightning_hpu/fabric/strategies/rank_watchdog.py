"""Fabric's side of "no rank left behind": the job's watchdog (:mod:`lightning_hpu.distributed.rank_watchdog`), and
a rank's uncaught exception stops every rank (Fabric has no exception hook of its own)."""

from __future__ import annotations

import sys
from typing import Any

from lightning.fabric.strategies import ParallelStrategy
from lightning.fabric.strategies.launchers import _MultiProcessingLauncher, _SubprocessScriptLauncher
from typing_extensions import override

from lightning_hpu.distributed.rank_watchdog import (
    RankWatchdog,
    follow_if_lightning_launched,
    mark_or_follow_launcher,
    report_abort,
    watch_job_of,
)

#: Fabric's launchers that start the ranks of a job from this process.
FABRIC_LAUNCHERS = (_SubprocessScriptLauncher, _MultiProcessingLauncher)


class FabricRankWatchdogHooks(ParallelStrategy):
    """Fabric strategy mixin: the job's ranks exit together. A rank's uncaught exception stops every rank."""

    _watchdog: RankWatchdog | None = None

    @override
    def _configure_launcher(self) -> None:
        super()._configure_launcher()
        mark_or_follow_launcher(self, FABRIC_LAUNCHERS)

    @override
    def setup_environment(self) -> None:
        follow_if_lightning_launched(self)
        super().setup_environment()
        if self._watchdog is None:
            self._watchdog = watch_job_of(self)
            if self._watchdog is not None:
                _abort_on_uncaught_exception(self._watchdog, self.global_rank)


def _abort_on_uncaught_exception(watchdog: RankWatchdog, rank: int) -> None:
    """The rank's uncaught exception tells the other ranks to stop, then is reported as usual."""
    previous = sys.excepthook

    def abort_then_report(kind: type[BaseException], error: BaseException, traceback: Any) -> None:
        if not isinstance(error, KeyboardInterrupt):
            report_abort(watchdog, rank, error)
        previous(kind, error, traceback)

    sys.excepthook = abort_then_report
