"""How many steps of each kind a run will take, from the Trainer's limits.

The profiler's default schedule (wait 1, warm up 1, record 3) saves a trace only after five steps of a kind; a run
with fewer must record every step instead, or it writes no trace (and the Gaudi bridge can crash). Lightning
counts only one epoch's batches; this also counts epochs, ``max_steps`` and gradient accumulation.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from lightning.pytorch.trainer.states import TrainerFn

if TYPE_CHECKING:
    from lightning.pytorch import Trainer

#: Steps the default schedule needs before it saves a trace: wait=1 + warmup=1 + active=3.
DEFAULT_SCHEDULE_STEPS = 5

STEP_KINDS = ("training_step", "validation_step", "test_step", "predict_step")


def step_kind(action_name: str) -> str | None:
    """The step kind an action name ends with (``"training_step"``, ...), or ``None`` for other actions."""
    return next((kind for kind in STEP_KINDS if action_name.endswith(kind)), None)


def _total(batches: int | float | list[int | float]) -> float:
    return float(sum(batches)) if isinstance(batches, list) else float(batches)


def fit_epochs(trainer: Trainer) -> float:
    """Epochs the fit will run: ``max_epochs``, fewer when ``max_steps`` ends it first (``inf`` when unbounded)."""
    max_epochs = trainer.max_epochs
    epochs = math.inf if max_epochs is None or max_epochs == -1 else float(max_epochs)
    per_epoch = _total(trainer.num_training_batches)
    if trainer.max_steps >= 0 and 0 < per_epoch < math.inf:
        epochs = min(epochs, math.ceil(trainer.max_steps * trainer.accumulate_grad_batches / per_epoch))
    return epochs


def planned_steps(trainer: Trainer, kind: str) -> float:
    """Steps of ``kind`` the current stage will run (``inf`` when not yet known or unbounded)."""
    if kind == "training_step":
        per_epoch = _total(trainer.num_training_batches)
        steps = 0.0 if per_epoch == 0 else per_epoch * fit_epochs(trainer)
        if trainer.max_steps >= 0:
            steps = min(steps, float(trainer.max_steps * trainer.accumulate_grad_batches))
        return steps
    if kind == "validation_step":
        runs = 1.0
        if trainer.state.fn == TrainerFn.FITTING:
            every = trainer.check_val_every_n_epoch or 1
            epochs = fit_epochs(trainer)
            runs = epochs if math.isinf(epochs) else float(epochs // every)
        per_run = _total(trainer.num_val_batches)
        return _total(trainer.num_sanity_val_batches) + (0.0 if per_run == 0 else per_run * runs)
    if kind == "test_step":
        return _total(trainer.num_test_batches)
    return _total(trainer.num_predict_batches)
