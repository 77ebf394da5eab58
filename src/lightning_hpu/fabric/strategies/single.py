"""Fabric on one HPU; the Trainer's twin is :mod:`lightning_hpu.pytorch.strategies.single`."""

from __future__ import annotations

from lightning.fabric.strategies import SingleDeviceStrategy
from lightning.fabric.strategies.registry import _StrategyRegistry
from typing_extensions import override

from lightning_hpu.distributed.single_device import SingleHPUHooks
from lightning_hpu.fabric.strategies.base import FabricFusedClipHooks, FabricHPUStrategyHooks


class SingleHPUStrategy(SingleHPUHooks, FabricHPUStrategyHooks, FabricFusedClipHooks, SingleDeviceStrategy):
    """Fabric strategy for one HPU (``strategy="hpu_single"``).

    Args:
        device: the device to train on; the HPU of this process by default.
        accelerator, checkpoint_io, precision: as Lightning's ``SingleDeviceStrategy``.
        pipeline_forward_backward: also mark a step between forward and backward (at ``fabric.backward``), as
            optimum-habana's ``pipelining_fwd_bwd`` does in lazy mode.
    """

    @classmethod
    @override
    def register_strategies(cls, strategy_registry: _StrategyRegistry) -> None:
        strategy_registry.register(cls.strategy_name, cls, description=f"{cls.__name__}: one HPU")
        # lightning-habana's Fabric name for it.
        strategy_registry.register("single_hpu", cls, description=f"{cls.__name__}: one HPU (lightning-habana's name)")
