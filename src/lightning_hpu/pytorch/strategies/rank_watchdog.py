"""The Trainer's side of "no rank left behind": the job's watchdog (:mod:`lightning_hpu.distributed.rank_watchdog`)
follows each step, and a rank's failure stops every rank."""

from __future__ import annotations

from typing import Any

from lightning.pytorch.strategies import ParallelStrategy
from lightning.pytorch.strategies.launchers import _MultiProcessingLauncher, _SubprocessScriptLauncher
from typing_extensions import override

from lightning_hpu.distributed.rank_watchdog import (
    RankWatchdog,
    follow_if_lightning_launched,
    mark_or_follow_launcher,
    report_abort,
    watch_job_of,
)

__all__ = ["RankWatchdogHooks"]

#: The Trainer's launchers that start the ranks of a job from this process.
TRAINER_LAUNCHERS = (_SubprocessScriptLauncher, _MultiProcessingLauncher)


class RankWatchdogHooks(ParallelStrategy):
    """Trainer strategy mixin: the job's ranks exit together (:class:`RankWatchdog`, launcher following).

    Part of every HPU parallel strategy (through :class:`~lightning_hpu.pytorch.strategies.hccl.HCCLCollectiveOps`).
    """

    _watchdog: RankWatchdog | None = None
    _steps_started: dict[str, int] | None = None

    @override
    def _configure_launcher(self) -> None:
        super()._configure_launcher()
        mark_or_follow_launcher(self, TRAINER_LAUNCHERS)

    @override
    def setup_environment(self) -> None:
        follow_if_lightning_launched(self)
        super().setup_environment()
        self.start_rank_watchdog()

    def start_rank_watchdog(self) -> None:
        """Watch this job's ranks, once the process group exists (strategies that bypass
        :meth:`setup_environment`'s chain call this themselves)."""
        if self._watchdog is None:
            self._watchdog = watch_job_of(self)
        self._steps_started = {}

    def _note_step(self, stage: str) -> None:
        if self._watchdog is not None and self._steps_started is not None:
            count = self._steps_started[stage] = self._steps_started.get(stage, 0) + 1
            self._watchdog.note(f"{stage} step {count}")

    @override
    def training_step(self, *args: Any, **kwargs: Any) -> Any:
        self._note_step("training")
        return super().training_step(*args, **kwargs)

    @override
    def validation_step(self, *args: Any, **kwargs: Any) -> Any:
        self._note_step("validation")
        return super().validation_step(*args, **kwargs)

    @override
    def test_step(self, *args: Any, **kwargs: Any) -> Any:
        self._note_step("test")
        return super().test_step(*args, **kwargs)

    @override
    def predict_step(self, *args: Any, **kwargs: Any) -> Any:
        self._note_step("predict")
        return super().predict_step(*args, **kwargs)

    @override
    def on_exception(self, exception: BaseException) -> None:
        super().on_exception(exception)
        if self._watchdog is None or isinstance(exception, KeyboardInterrupt):
            return
        reason = report_abort(self._watchdog, self.global_rank, exception)
        if hasattr(exception, "add_note"):
            exception.add_note(f"lightning-hpu: {reason}")

    @override
    def teardown(self) -> None:
        if self._watchdog is not None:
            self._watchdog.close()
            self._watchdog = None
        super().teardown()
