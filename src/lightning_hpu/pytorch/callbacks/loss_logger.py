"""``HPULossLogger``: logs the mean training loss of each logging interval, optionally without non-finite losses."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import lightning.pytorch as pl
from lightning.pytorch.callbacks import Callback
from torch import Tensor
from typing_extensions import override

from lightning_hpu.device.finite_mean import FiniteMean


class HPULossLogger(Callback):
    """Log the mean of the training steps' losses every ``log_every_n_steps`` optimizer steps, as optimum-habana's
    trainer logs ``loss``; with ``nan_inf_filter`` (its ``logging_nan_inf_filter``) a NaN or infinite loss is left out
    of the mean instead of turning it into NaN.

    The losses are summed on the device; nothing waits for the host until the logger reads the value.

    Args:
        name: the logged metric's name.
        nan_inf_filter: leave non-finite losses out of the mean.
    """

    def __init__(self, name: str = "loss", nan_inf_filter: bool = True) -> None:
        self.name = name
        self.mean = FiniteMean(nan_inf_filter)
        self._logged_at = -1

    @override
    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.mean.reset()
        self._logged_at = -1

    @override
    def on_train_batch_end(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        loss = outputs.get("loss") if isinstance(outputs, Mapping) else outputs
        if isinstance(loss, Tensor):
            self.mean.update(loss)
        step = trainer.global_step
        every = max(int(getattr(trainer, "log_every_n_steps", 50)), 1)  # set on the Trainer by its logger connector
        if not self.mean.empty and step != self._logged_at and step % every == 0:
            pl_module.log(self.name, self.mean.compute(), on_step=True, on_epoch=False, prog_bar=True)
            self.mean.reset()
            self._logged_at = step
