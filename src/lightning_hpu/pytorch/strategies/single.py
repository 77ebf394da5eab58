"""Training on one HPU."""

from __future__ import annotations

from lightning.fabric.plugins import CheckpointIO
from lightning.fabric.utilities.types import _DEVICE
from lightning.pytorch.accelerators.accelerator import Accelerator
from lightning.pytorch.plugins.precision import Precision
from lightning.pytorch.strategies import SingleDeviceStrategy
from lightning.pytorch.strategies.strategy import _StrategyRegistry
from typing_extensions import override

from lightning_hpu.device.selection import single_process_device
from lightning_hpu.pytorch.strategies.base import HPUStrategyHooks
from lightning_hpu.pytorch.strategies.last_batch import LastBatch, LastBatchHooks, check_last_batch


class SingleHPUStrategy(HPUStrategyHooks, LastBatchHooks, SingleDeviceStrategy):
    """One process, one HPU (``strategy="hpu_single"``).

    Args:
        device: the device to train on; the HPU of this process by default.
        pipeline_forward_backward: also mark a step between forward and backward (Gaudi2: faster when the host is
            the bottleneck; uses more device memory).
        last_batch: a ragged last training batch (a new shape: one more compilation): ``"pad"`` it with samples
            from the start of the epoch, ``"drop"`` it, ``"keep"`` it, or ``"warn"`` once and keep it.
    """

    strategy_name = "hpu_single"

    def __init__(
        self,
        device: _DEVICE | None = None,
        accelerator: Accelerator | None = None,
        checkpoint_io: CheckpointIO | None = None,
        precision_plugin: Precision | None = None,
        pipeline_forward_backward: bool = False,
        last_batch: LastBatch = "warn",
    ) -> None:
        self.last_batch = check_last_batch(last_batch)
        super().__init__(
            device=single_process_device(device),
            accelerator=accelerator,
            checkpoint_io=checkpoint_io,
            precision_plugin=precision_plugin,
        )
        self.pipeline_forward_backward = pipeline_forward_backward

    @classmethod
    @override
    def register_strategies(cls, strategy_registry: _StrategyRegistry) -> None:
        strategy_registry.register(cls.strategy_name, cls, description=f"{cls.__name__}: training on one HPU")
