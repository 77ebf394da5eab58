"""Fabric on one HPU; the Trainer's twin is :mod:`lightning_hpu.pytorch.strategies.single`."""

from __future__ import annotations

import torch
from lightning.fabric.accelerators import Accelerator
from lightning.fabric.plugins import CheckpointIO, Precision
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

    def __init__(
        self,
        device: torch.device | str | int | None = None,
        accelerator: Accelerator | None = None,
        checkpoint_io: CheckpointIO | None = None,
        precision: Precision | None = None,
        *,
        pipeline_forward_backward: bool = False,
    ) -> None:
        super().__init__(
            device,
            pipeline_forward_backward=pipeline_forward_backward,
            accelerator=accelerator,
            checkpoint_io=checkpoint_io,
            precision=precision,
        )

    @classmethod
    @override
    def register_strategies(cls, strategy_registry: _StrategyRegistry) -> None:
        # lightning-habana's Fabric name for it, "single_hpu", is not registered: it works where an HPU is asked for
        # (lightning_hpu.integration.strategy_names.HPU_ONLY_NAMES), and a CPU program's registry stays Lightning's.
        strategy_registry.register(cls.strategy_name, cls, description=f"{cls.__name__}: one HPU")
