"""Fabric on one HPU; the Trainer's twin is :mod:`lightning_hpu.pytorch.strategies.single`."""

from __future__ import annotations

from lightning.fabric.accelerators import Accelerator
from lightning.fabric.plugins import CheckpointIO, Precision
from lightning.fabric.strategies import SingleDeviceStrategy
from lightning.fabric.strategies.registry import _StrategyRegistry
from lightning.fabric.utilities.types import _DEVICE
from typing_extensions import override

from lightning_hpu.device.selection import single_process_device
from lightning_hpu.fabric.strategies.base import FabricFusedClipHooks, FabricHPUStrategyHooks


class SingleHPUStrategy(FabricHPUStrategyHooks, FabricFusedClipHooks, SingleDeviceStrategy):
    """Fabric strategy for one HPU (``strategy="hpu_single"``).

    Args:
        pipeline_forward_backward: also mark a step between forward and backward (at ``fabric.backward``), as
            optimum-habana's ``pipelining_fwd_bwd`` does in lazy mode.
    """

    strategy_name = "hpu_single"

    def __init__(
        self,
        device: _DEVICE | None = None,
        accelerator: Accelerator | None = None,
        checkpoint_io: CheckpointIO | None = None,
        precision: Precision | None = None,
        pipeline_forward_backward: bool = False,
    ) -> None:
        self.pipeline_forward_backward = pipeline_forward_backward
        super().__init__(
            device=single_process_device(device),
            accelerator=accelerator,
            checkpoint_io=checkpoint_io,
            precision=precision,
        )

    @classmethod
    @override
    def register_strategies(cls, strategy_registry: _StrategyRegistry) -> None:
        strategy_registry.register(cls.strategy_name, cls, description=f"{cls.__name__}: one HPU")
        # lightning-habana's Fabric name for it.
        strategy_registry.register("single_hpu", cls, description=f"{cls.__name__}: one HPU (lightning-habana's name)")
