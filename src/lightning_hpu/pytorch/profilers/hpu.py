"""HPUProfiler: Lightning's PyTorch profiler, recording the HPU and fixing what the archived one left out."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from lightning.pytorch.profilers import PyTorchProfiler
from lightning.pytorch.utilities.rank_zero import rank_zero_warn
from torch.profiler import ProfilerAction
from typing_extensions import override

from lightning_hpu.device.accelerator import HPUAccelerator
from lightning_hpu.profiler.environment import check_habana_profile
from lightning_hpu.profiler.output import check_dirpath, written_traces
from lightning_hpu.profiler.report import OperatorCost, heaviest_operators, memory_table, operator_table
from lightning_hpu.profiler.stage_schedule import check_steps, stage_schedules
from lightning_hpu.pytorch.profilers.steps import DEFAULT_SCHEDULE_STEPS, planned_steps, step_kind
from lightning_hpu.runtime import hpu_available, require_backend

if TYPE_CHECKING:
    from lightning.pytorch import Trainer


def _record_every_step(step: int) -> ProfilerAction:
    """The schedule for runs too short for the default one: record from the first step, save at the end."""
    return ProfilerAction.RECORD


def _current_activities(activities: Any) -> list[Any]:
    """The same activities as members of the ``torch.profiler.ProfilerActivity`` of now.

    The Gaudi bridge replaces that enum at import and its profiler accepts only the new members, so members taken
    from an older binding (Lightning's own import, a user's) are looked up again by name.
    """
    current: Any = torch.profiler.ProfilerActivity
    return [getattr(current, getattr(activity, "name", str(activity))) for activity in activities]


class HPUProfiler(PyTorchProfiler):
    """Lightning's :class:`~lightning.pytorch.profilers.PyTorchProfiler` for Intel Gaudi (HPU) runs.

    * Records the HPU activity when the Trainer runs on an HPU (CPU activity only on the CPU stand-in or another
      accelerator), whether the bridge or Lightning was imported first.
    * With several processes, names each report and trace by the **global** rank (Lightning uses the local rank,
      which repeats across nodes).
    * Replaces the default schedule, with a warning, when a stage has too few steps for it, so short runs still
      write a trace.
    * :meth:`summary` gives the heaviest operators, the device memory and Lightning's table of all events.
    * Refuses a conflicting ``HABANA_PROFILE``, and a ``dirpath`` that is a file, before any work starts.
    * Says at the end of each stage where it wrote the report and the traces.

    Timings are taken synchronously, so wall-clock time under this profiler is not the run's real time; use
    :class:`~lightning.pytorch.profilers.SimpleProfiler` for end-to-end time.

    Args:
        dirpath: Directory for the report and the traces; defaults to the Trainer's ``log_dir``.
        filename: Name of the report (``.txt``) and prefix of the traces; without it the report is logged.
        group_by_input_shapes: Group Lightning's table by input shapes (needs ``record_shapes=True``).
        export_to_chrome: Write Chrome-trace JSON files (``*.pt.trace.json``) that TensorBoard also reads.
        row_limit: Rows in each table of the summary; ``-1`` for all.
        sort_by_key: Column Lightning's table of all events is sorted by.
        record_module_names: Add a range around each submodule's forward.
        emit_nvtx: Refused when ``True``: NVTX ranges exist only on CUDA (kept in Lightning's place for positional
            arguments).
        table_kwargs: More keyword arguments for Lightning's table.
        training_steps: ``(warmup, active)``: warm up for the first ``warmup`` training steps, record the next
            ``active`` ones, then no more (optimum-habana's ``profiling_warmup_steps``, ``profiling_steps``).
        evaluation_steps: the same for validation and test steps (``profiling_warmup_steps_eval``,
            ``profiling_steps_eval``). Neither can be combined with ``schedule``. One torch profiler records both
            kinds, so the two windows must not overlap: let the training window end before the first validation.
        **profiler_kwargs: keyword arguments for :class:`torch.profiler.profile` (``schedule``, ``activities``,
            ``record_shapes``, ``profile_memory``, ``with_stack``, ...), as Lightning's.
    """

    def __init__(
        self,
        dirpath: str | Path | None = None,
        filename: str | None = None,
        group_by_input_shapes: bool = False,
        emit_nvtx: bool = False,
        export_to_chrome: bool = True,
        row_limit: int = 20,
        sort_by_key: str | None = None,
        record_module_names: bool = True,
        table_kwargs: dict[str, Any] | None = None,
        *,
        training_steps: tuple[int, int] | None = None,
        evaluation_steps: tuple[int, int] | None = None,
        **profiler_kwargs: Any,
    ) -> None:
        schedule_given = "schedule" in profiler_kwargs
        #: The activities the user asked for, or ``None`` to choose them from the accelerator when profiling starts.
        self._requested_activities: list[Any] | None = profiler_kwargs.get("activities")
        self._schedule_replaced = False
        super().__init__(
            dirpath,
            filename,
            group_by_input_shapes=group_by_input_shapes,
            emit_nvtx=False,
            export_to_chrome=export_to_chrome,
            row_limit=row_limit,
            sort_by_key=sort_by_key,
            record_module_names=record_module_names,
            table_kwargs=table_kwargs,
            **profiler_kwargs,
        )
        # Checked once Lightning's attributes exist (its ``__del__`` needs them), before anything is recorded.
        self._stage_schedules = stage_schedules(
            training_steps=check_steps("training_steps", training_steps),
            evaluation_steps=check_steps("evaluation_steps", evaluation_steps),
        )
        if self._stage_schedules and schedule_given:
            raise ValueError(
                "HPUProfiler: `training_steps`/`evaluation_steps` choose the recorded steps themselves;"
                " drop `schedule`."
            )
        if emit_nvtx:
            raise ValueError("HPUProfiler(emit_nvtx=True): NVTX ranges exist only on CUDA; remove emit_nvtx.")
        check_dirpath(dirpath)
        check_habana_profile()

    # --- where and what ----------------------------------------------------------------------
    def _trainer(self) -> Trainer | None:
        module = self._lightning_module
        if module is None:
            return None
        try:
            return module.trainer
        except (RuntimeError, ReferenceError):
            return None

    def _runs_on_hpu(self) -> bool:
        trainer = self._trainer()
        if trainer is None:
            return hpu_available()
        return isinstance(trainer.accelerator, HPUAccelerator)

    @override
    def setup(self, stage: str, local_rank: int | None = None, log_dir: str | None = None) -> None:
        """Check ``HABANA_PROFILE`` again, and name files by the global rank when there are several processes."""
        check_habana_profile()
        trainer = self._trainer()
        if local_rank is not None and trainer is not None:
            # Lightning's file names and report headers use this rank; local ranks repeat across nodes.
            local_rank = trainer.global_rank
        super().setup(stage, local_rank=local_rank, log_dir=log_dir)

    @override
    def _default_activities(self) -> list[Any]:
        if self._runs_on_hpu():
            return require_backend().profiler_activities()
        return _current_activities(super()._default_activities())

    @override
    def _create_profilers(self) -> None:
        if self.profiler is None:
            # Chosen now, not at construction: the accelerator is known and the bridge has patched torch.
            requested = self._requested_activities
            self._profiler_kwargs["activities"] = (
                self._default_activities() if requested is None else _current_activities(requested)
            )
        super()._create_profilers()

    # --- schedule ------------------------------------------------------------------------------
    @override
    def _should_override_schedule(self) -> bool:
        # Decided in :meth:`stop` from the whole run's step count (Lightning counts one epoch's batches only).
        return False

    def _replace_short_schedule(self, action_name: str) -> None:
        kind = step_kind(action_name)
        trainer = self._trainer()
        wrapper = self._schedule
        if kind is None or trainer is None or wrapper is None or self.profiler is None:
            return
        if wrapper._schedule is not self._default_schedule():
            return
        steps = planned_steps(trainer, kind)
        if steps >= DEFAULT_SCHEDULE_STEPS:
            return
        rank_zero_warn(
            f"HPUProfiler: this run has {int(steps)} {kind} step(s), fewer than the {DEFAULT_SCHEDULE_STEPS} that"
            " the default profiler schedule (wait=1, warmup=1, active=3) needs before it saves a trace; recording"
            " every step instead. Pass `schedule=torch.profiler.schedule(...)` to choose the steps yourself."
        )
        wrapper._schedule = _record_every_step
        self._schedule_replaced = True

    def _use_stage_schedule(self, action_name: str) -> None:
        """Before a step of a kind with its own ``(warmup, active)``, switch to that kind's schedule."""
        kind = step_kind(action_name)
        if kind is None or not self._stage_schedules or self._schedule is None:
            return
        schedule = self._stage_schedules.get(kind, self._default_schedule())
        wrapper = self._schedule
        if wrapper._schedule is not schedule and wrapper._prev_schedule_action in (
            ProfilerAction.WARMUP,
            ProfilerAction.RECORD,
        ):
            rank_zero_warn(
                f"HPUProfiler: a {kind} came while the profiler was still recording another kind of step; the"
                " windows of `training_steps` and `evaluation_steps` overlap, so the traces mix both kinds."
                " Record fewer training steps, or validate later."
            )
        if schedule is not None:
            self._schedule._schedule = schedule
            self._schedule_replaced = True

    @override
    def stop(self, action_name: str) -> None:
        self._use_stage_schedule(action_name)
        self._replace_short_schedule(action_name)
        super().stop(action_name)

    @override
    def _delete_profilers(self) -> None:
        super()._delete_profilers()
        default = self._default_schedule()
        if self._schedule_replaced and self._schedule is not None and default is not None:
            # The next stage decides afresh from its own step count.
            self._schedule._schedule = default
        self._schedule_replaced = False

    @override
    def _cache_functions_events(self) -> None:
        if isinstance(self.profiler, torch.profiler.profile) and self.profiler.profiler is None:
            # Entered but stopped before any step was recorded (a failed setup, a stage without steps).
            self.function_events = None
            return
        super()._cache_functions_events()

    # --- report --------------------------------------------------------------------------------
    @override
    def describe(self) -> None:
        """Write the report (to ``dirpath``/the log), then say which files this stage wrote."""
        super().describe()
        if self.dirpath is None or "://" in str(self.dirpath):
            return
        report = Path(self.dirpath, self._prepare_filename())
        traces = written_traces(self.dirpath, self._prepare_filename(extension="")) if self._export_to_chrome else []
        written = [f"report {report.resolve()}"] if self.filename and report.is_file() else []
        if traces:
            directory = Path(self.dirpath).resolve()
            written.append(f"{len(traces)} trace(s) in {directory} (view: tensorboard --logdir {directory})")
        if written:
            self._rank_zero_info("HPUProfiler wrote: " + "; ".join(written))

    def heaviest_operators(self, limit: int | None = None) -> list[OperatorCost]:
        """The recorded operators, heaviest first (by self device time when the device reports it, else self CPU
        time); at most ``limit`` (default: ``row_limit``). Empty before anything was recorded; like :meth:`summary`,
        it ends a recording still running."""
        if self.profiler is not None:
            self._delete_profilers()
        if not self.function_events:
            return []
        return heaviest_operators(self.function_events, self._row_limit if limit is None else limit)

    @override
    def summary(self) -> str:
        """The heaviest operators, the device's memory (on HPU runs) and Lightning's table of all recorded events."""
        if not self._profiler_kwargs.get("enabled", True):
            return ""
        self._delete_profilers()
        if not self.function_events:
            return ""
        stats = {"heaviest operators": operator_table(self.heaviest_operators())}
        if self._runs_on_hpu():
            stats["device memory"] = memory_table(require_backend().memory_stats())
        averages = self.function_events.key_averages(group_by_input_shapes=self._group_by_input_shapes)
        stats["all records"] = averages.table(
            sort_by=self._sort_by_key, row_limit=self._row_limit, **self._table_kwargs
        )
        return self._stats_to_str(stats)
