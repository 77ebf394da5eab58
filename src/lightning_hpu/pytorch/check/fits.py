"""The check's Trainer fits on one HPU: one function builds them all, so modes and precisions differ only as asked."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lightning.fabric.plugins import CheckpointIO
from lightning.pytorch import Callback, Trainer
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.plugins import Precision
from typing_extensions import override

from lightning_hpu.pytorch.check.model import DEFAULT_SIZE, CheckTransformer, Size, token_data
from lightning_hpu.runtime import require_backend


class StepTimer(Callback):
    """Wall time of each training step, with the device synchronised at both ends (work is asynchronous)."""

    def __init__(self) -> None:
        self.seconds: list[float] = []
        self._start = 0.0

    @override
    def on_train_batch_start(self, trainer: Trainer, pl_module: Any, batch: Any, batch_idx: int) -> None:
        require_backend().synchronize()
        self._start = time.perf_counter()

    @override
    def on_train_batch_end(self, trainer: Trainer, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        require_backend().synchronize()
        self.seconds.append(time.perf_counter() - self._start)


@dataclass
class Fit:
    """A finished fit: its model (with its per-step losses), trainer and step times."""

    model: CheckTransformer
    trainer: Trainer
    step_seconds: list[float] = field(default_factory=list)

    @property
    def losses(self) -> list[float]:
        return self.model.losses


def fit(
    steps: int,
    *,
    size: Size = DEFAULT_SIZE,
    lr: float = 3e-3,
    seed: int = 0,
    precision: str = "32-true",
    plugins: Sequence[Precision | CheckpointIO] = (),
    callbacks: Sequence[Callback] = (),
    model: CheckTransformer | None = None,
    ckpt_path: str | None = None,
    **trainer_options: Any,
) -> Fit:
    """Train the check's transformer for ``steps`` steps on one HPU, quietly, and time every step."""
    model = model or CheckTransformer(size, lr=lr, seed=seed)
    timer = StepTimer()
    options: dict[str, Any] = {"plugins": list(plugins)} if plugins else {}
    if not any(isinstance(plugin, Precision) for plugin in plugins):
        options["precision"] = precision
    trainer = Trainer(
        accelerator="hpu",
        devices=1,
        max_steps=steps,
        max_epochs=-1,
        callbacks=[*callbacks, timer],
        logger=False,
        enable_checkpointing=any(isinstance(callback, ModelCheckpoint) for callback in callbacks),
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        **options,
        **trainer_options,
    )
    trainer.fit(model, token_data(size), ckpt_path=ckpt_path)
    return Fit(model, trainer, timer.seconds)
