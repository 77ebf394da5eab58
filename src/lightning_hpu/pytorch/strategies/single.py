"""Training on one HPU."""

from __future__ import annotations

import lightning.pytorch as pl
import torch
from lightning.fabric.plugins import CheckpointIO
from lightning.pytorch.plugins.precision import Precision
from lightning.pytorch.strategies import SingleDeviceStrategy
from lightning.pytorch.strategies.strategy import _StrategyRegistry
from typing_extensions import override

from lightning_hpu.distributed.single_device import SingleHPUHooks
from lightning_hpu.pytorch.strategies.base import HPUStrategyHooks
from lightning_hpu.pytorch.strategies.last_batch import LastBatch, LastBatchHooks, check_last_batch


class SingleHPUStrategy(SingleHPUHooks, HPUStrategyHooks, LastBatchHooks, SingleDeviceStrategy):
    """One process, one HPU (``strategy="hpu_single"``).

    Args:
        device: the device to train on; the HPU of this process by default.
        accelerator, checkpoint_io, precision_plugin: as Lightning's ``SingleDeviceStrategy``.
        pipeline_forward_backward: also mark a step between forward and backward (Gaudi2: faster when the host is
            the bottleneck; uses more device memory).
        last_batch: a ragged last training batch (a new shape: one more compilation): ``"pad"`` it with samples
            from the start of the epoch, ``"drop"`` it, ``"keep"`` it, or ``"warn"`` once and keep it.
    """

    def __init__(
        self,
        device: torch.device | str | int | None = None,
        accelerator: pl.accelerators.Accelerator | None = None,
        checkpoint_io: CheckpointIO | None = None,
        precision_plugin: Precision | None = None,
        *,
        pipeline_forward_backward: bool = False,
        last_batch: LastBatch = "warn",
    ) -> None:
        self.last_batch = check_last_batch(last_batch)
        super().__init__(
            device,
            pipeline_forward_backward=pipeline_forward_backward,
            accelerator=accelerator,
            checkpoint_io=checkpoint_io,
            precision_plugin=precision_plugin,
        )

    @classmethod
    @override
    def register_strategies(cls, strategy_registry: _StrategyRegistry) -> None:
        strategy_registry.register(cls.strategy_name, cls, description=f"{cls.__name__}: training on one HPU")
