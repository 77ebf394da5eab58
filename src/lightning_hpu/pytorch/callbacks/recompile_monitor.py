"""``HPURecompileMonitor``: how many graphs were compiled in each training step, and a warning when it goes on.

On a Gaudi every compilation costs seconds, so a run that keeps compiling after its first steps is slow for a
reason the user can fix (a ragged last batch, a changing Python value in a guard, a data-dependent shape). The
monitor counts compilations per training step from the source that sees them (see :mod:`.sources`), keeps them in
:attr:`~HPURecompileMonitor.per_step`, logs them as ``hpu/compilations`` and warns once when they continue past
``warmup_steps``.
"""

from __future__ import annotations

from typing import Any

import lightning.pytorch as pl
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.utilities.rank_zero import rank_zero_warn
from typing_extensions import override

from lightning_hpu.compile.sources import CompilationSource, compilation_source
from lightning_hpu.runtime import require_backend


def check_warmup_steps(value: object) -> int:
    """``value`` if it is a count of steps, else a one-sentence error."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"`warmup_steps` must be a non-negative integer, e.g. warmup_steps=3, not {value!r}.")
    return value


class HPURecompileMonitor(Callback):
    """Count graph compilations in every training step; warn once when they go on after ``warmup_steps``.

    Sources: in eager mode with ``torch.compile``, TorchDynamo's compilations (and its guard failures as reasons);
    in lazy mode, the bridge's ``graph_compilation`` metric on a Gaudi, or, on the CPU stand-in, a model of the graph
    compiler's cache (each new signature of ops and input shapes between two step markers is one compilation).

    Args:
        warmup_steps: training steps (batches) allowed to compile before compiling is worth a warning.

    Attributes:
        per_step: compilations in each training step of the latest fit, in order (one entry per batch).
        total: their sum.
    """

    def __init__(self, warmup_steps: int = 3) -> None:
        self.warmup_steps = check_warmup_steps(warmup_steps)
        self.per_step: list[int] = []
        self.reasons: list[str | None] = []
        self._source: CompilationSource | None = None
        self._warned = False

    @property
    def total(self) -> int:
        """Compilations in all training steps of the latest fit."""
        return sum(self.per_step)

    @override
    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.per_step = []
        self.reasons = []
        self._warned = False
        self._source = compilation_source(require_backend())
        self._source.start()

    @override
    def on_train_batch_start(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch: Any, batch_idx: int
    ) -> None:
        if self._source is not None:
            self._source.mark()

    @override
    def on_train_batch_end(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        if self._source is None:
            return
        count, reason = self._source.since_mark()
        self.per_step.append(count)
        self.reasons.append(reason)
        if trainer.loggers:
            pl_module.log("hpu/compilations", float(count), on_step=True, on_epoch=False, batch_size=1)
        step = len(self.per_step) - 1
        if count and step >= self.warmup_steps and not self._warned:
            self._warned = True
            where = " (the first of an epoch)" if batch_idx == 0 else ""
            why = f" ({reason})" if reason else ""
            rank_zero_warn(
                f"HPURecompileMonitor: {count} graph compilation(s) in training step {step}{where}, after the"
                f" {self.warmup_steps} warm-up steps{why}. Each compilation stalls the HPU: keep input shapes fixed"
                " (SingleHPUStrategy/HPUParallelStrategy(last_batch='pad' or 'drop') for a ragged last batch) and"
                " keep Python values that the compiled code reads constant."
            )

    @override
    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._stop()

    @override
    def on_exception(self, trainer: pl.Trainer, pl_module: pl.LightningModule, exception: BaseException) -> None:
        self._stop()

    @override
    def teardown(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        self._stop()

    def _stop(self) -> None:
        source, self._source = self._source, None
        if source is not None:
            source.stop()
