"""``HPUThroughputMonitor``: Lightning's ``ThroughputMonitor`` timed correctly on an HPU.

Lightning's monitor synchronizes only CUDA before reading the clock; on an HPU it would time how fast the host
queues work, not how fast the device runs it. This one waits for the HPU first. It also leaves the first
``warmup_steps`` batches of each stage out of the measurement: on a Gaudi they include graph compilation, which would
make the throughput of a short run meaningless.

When the LightningModule has ``flops_per_batch``, it logs model FLOPs utilisation (``device/mfu``) against the peak
of the device generation and precision in use (:mod:`.peak_flops`), as Lightning's monitor does for CUDA GPUs, or
against ``available_flops`` when given.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import lightning.pytorch as pl
from lightning.pytorch.callbacks import ThroughputMonitor
from lightning.pytorch.trainer.states import RunningStage
from typing_extensions import override

from lightning_hpu.compile.peak_flops import compute_precision, gaudi_peak_flops
from lightning_hpu.pytorch.callbacks.excluded_time import ExcludedTime
from lightning_hpu.pytorch.callbacks.recompile_monitor import check_warmup_steps
from lightning_hpu.runtime import require_backend


class HPUThroughputMonitor(ThroughputMonitor):
    """Throughput (batches, samples, FLOPs per second) of HPU runs, without the warm-up steps.

    Args:
        batch_size_fn: the number of samples in a batch.
        length_fn: the number of items (e.g. tokens) in a batch's samples.
        warmup_steps: batches of each stage left out at its start (compilation).
        available_flops: the peak FLOPs per second of one device, for MFU; by default the published peak of the
            device generation and precision in use (``lightning_hpu.compile.peak_flops.GAUDI_PEAK_FLOPS``).
        exclude_logging_and_saving: leave the time the loggers and checkpoint saves take out of the training time
            (optimum-habana's ``adjust_throughput``; validation time is always left out). The seconds left out are
            in :attr:`excluded_seconds`.
        window_size, separator: Lightning's ``Throughput``'s (batches the rates are averaged over; the separator of
            the logged names).
    """

    def __init__(
        self,
        batch_size_fn: Callable[[Any], int],
        length_fn: Callable[[Any], int] | None = None,
        warmup_steps: int = 3,
        available_flops: float | None = None,
        exclude_logging_and_saving: bool = False,
        window_size: int = 100,
        separator: str = "/",
    ) -> None:
        if available_flops is not None and (
            isinstance(available_flops, bool) or not isinstance(available_flops, (int, float)) or available_flops <= 0
        ):
            raise ValueError(
                "`available_flops` must be a positive number of FLOPs per second (e.g. 432e12),"
                f" not {available_flops!r}."
            )
        super().__init__(batch_size_fn=batch_size_fn, length_fn=length_fn, window_size=window_size, separator=separator)
        self.warmup_steps = check_warmup_steps(warmup_steps)
        self._available_flops_override = available_flops
        self._warmup_seen: dict[Any, int] = {}
        self._excluded = ExcludedTime(self._exclude) if exclude_logging_and_saving else None

    @property
    def excluded_seconds(self) -> float:
        """Seconds of logging and saving left out of the training time (0 unless ``exclude_logging_and_saving``)."""
        return 0.0 if self._excluded is None else self._excluded.seconds

    def _exclude(self, seconds: float) -> None:
        if RunningStage.TRAINING in self._t0s:
            self._t0s[RunningStage.TRAINING] += seconds

    def _synchronize(self, trainer: pl.Trainer) -> None:
        from lightning_hpu.pytorch.accelerator import HPUAccelerator

        if isinstance(trainer.accelerator, HPUAccelerator):
            require_backend().synchronize()

    @override
    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        super().setup(trainer, pl_module, stage)
        if self._excluded is not None:
            self._excluded.install(trainer)
        peak = self._peak_flops(trainer)
        self.available_flops = None if peak is None else int(peak)
        for throughput in self._throughputs.values():
            throughput.available_flops = peak

    @override
    def teardown(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        if self._excluded is not None:
            self._excluded.uninstall()
        super().teardown(trainer, pl_module, stage)

    def _peak_flops(self, trainer: pl.Trainer) -> float | None:
        """``available_flops`` if given; on an HPU the peak of its generation and precision; else Lightning's."""
        from lightning_hpu.pytorch.accelerator import HPUAccelerator

        if self._available_flops_override is not None:
            return self._available_flops_override
        if not isinstance(trainer.accelerator, HPUAccelerator):
            return None if self.available_flops is None else float(self.available_flops)
        return gaudi_peak_flops(require_backend().device_name(), compute_precision(trainer.precision_plugin))

    @override
    def _start(self, trainer: pl.Trainer) -> None:
        super()._start(trainer)
        stage = trainer.state.stage
        if stage in self._samples and self._samples[stage] == 0:
            self._warmup_seen[stage] = 0

    @override
    def _update(self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch: Any, iter_num: int) -> None:
        self._synchronize(trainer)
        stage = trainer.state.stage
        assert stage is not None
        seen = self._warmup_seen.get(stage, 0)
        if seen < self.warmup_steps:
            # A warm-up batch: not measured; the clock restarts when it is done.
            self._warmup_seen[stage] = seen + 1
            self._t0s[stage] = time.perf_counter()
            return
        super()._update(trainer, pl_module, batch, iter_num)

    @override
    def _compute(self, trainer: pl.Trainer, iter_num: int | None = None) -> None:
        stage = trainer.state.stage
        if stage is None or self._batches.get(stage, 0) == 0:
            return  # nothing measured yet (still warming up)
        super()._compute(trainer, iter_num)
