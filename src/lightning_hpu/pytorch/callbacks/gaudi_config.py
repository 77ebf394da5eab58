"""The Trainer callback of a :class:`~lightning_hpu.optimum.GaudiConfig`: dynamic shapes and the fused AdamW."""

from __future__ import annotations

import functools
from typing import Any, Protocol

import lightning.pytorch as pl
from lightning.pytorch.callbacks import Callback
from torch.optim import Optimizer
from typing_extensions import override


class GaudiConfigSettings(Protocol):
    """What the callback asks of a :class:`~lightning_hpu.optimum.GaudiConfig`."""

    def apply(self) -> None: ...

    def convert_optimizer(self, optimizer: Optimizer) -> Optimizer: ...


class GaudiConfigCallback(Callback):
    """Sets the graph compiler's dynamic shapes at setup and, with ``use_fused_adam``, swaps each AdamW the model
    configured for the fused AdamW once the strategy has built the optimizers (before a checkpoint restores their
    state), re-pointing the learning-rate schedulers at it."""

    def __init__(self, config: GaudiConfigSettings) -> None:
        self.config = config

    @override
    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        self.config.apply()

    @override
    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        strategy = trainer.strategy
        converted = [self.config.convert_optimizer(optimizer) for optimizer in strategy.optimizers]
        if all(new is old for new, old in zip(converted, strategy.optimizers, strict=True)):
            return
        replaced = {id(old): new for old, new in zip(strategy.optimizers, converted, strict=True)}
        for config in strategy.lr_scheduler_configs:
            scheduler = config.scheduler
            new = replaced.get(id(scheduler.optimizer))
            if new is not None:
                scheduler.optimizer = new
                _track_step_calls(new)
        strategy.optimizers = converted


def _track_step_calls(optimizer: Optimizer) -> None:
    """Mark the optimizer's steps as torch's schedulers do for the optimizer they are built with (they check that
    ``optimizer.step()`` ran before their own first step)."""
    step = optimizer.step
    if hasattr(step, "_wrapped_by_lr_sched"):
        return

    @functools.wraps(step)
    def tracked(*args: Any, **kwargs: Any) -> Any:
        optimizer._opt_called = True  # type: ignore[attr-defined]
        return step(*args, **kwargs)

    tracked._wrapped_by_lr_sched = True  # type: ignore[attr-defined]
    optimizer.step = tracked  # type: ignore[method-assign]
