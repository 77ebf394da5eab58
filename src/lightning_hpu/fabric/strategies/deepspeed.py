"""DeepSpeed on HPU for Lightning Fabric: Fabric's :class:`DeepSpeedStrategy` with the Trainer side's HPU rules.

Everything HPU-specific is shared with the Trainer's :class:`lightning_hpu.HPUDeepSpeedStrategy` through
:mod:`lightning_hpu.distributed.deepspeed_config`: DeepSpeed's accelerator, the device count, the checks before
any work, HCCL before DeepSpeed's process group and ``deepspeed.initialize`` on the process's HPU.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from lightning.fabric.accelerators import Accelerator
from lightning.fabric.strategies import DeepSpeedStrategy
from lightning.fabric.strategies.registry import _StrategyRegistry
from lightning.fabric.utilities.seed import reset_seed
from torch.nn import Module
from torch.optim import Optimizer
from typing_extensions import override

from lightning_hpu.distributed.deepspeed_config import (
    hpu_deepspeed_devices,
    initialize_engine,
    register_deepspeed_presets,
)
from lightning_hpu.distributed.deepspeed_hooks import DeepSpeedHooks
from lightning_hpu.fabric.strategies.base import FabricHPUStrategyHooks
from lightning_hpu.fabric.strategies.hccl import FabricHCCLParallelHooks

if TYPE_CHECKING:
    from deepspeed import DeepSpeedEngine


class HPUDeepSpeedStrategy(FabricHPUStrategyHooks, FabricHCCLParallelHooks, DeepSpeedHooks, DeepSpeedStrategy):
    """Fabric DeepSpeed (ZeRO 1-3, offload, bf16) on HPUs (``strategy="hpu_deepspeed"``, or ``"deepspeed"``).

    Takes every argument of Fabric's :class:`~lightning.fabric.strategies.DeepSpeedStrategy`.

    Args:
        parallel_devices: the HPUs of the processes (``[torch.device("hpu")] * n``) or their number ``n``; it must
            agree with ``Fabric(devices=...)``.
    """

    strategy_name = "hpu_deepspeed"

    def __init__(
        self,
        accelerator: Accelerator | None = None,
        *,
        parallel_devices: list[torch.device] | int | None = None,
        **kwargs: Any,
    ) -> None:
        self._requested_devices, devices = hpu_deepspeed_devices(parallel_devices)
        super().__init__(accelerator=accelerator, parallel_devices=devices, **kwargs)

    @override
    def validate_for_device(self) -> None:
        """Refuse what the HPU cannot run (the Trainer side's rules)."""
        self._check_for_device(str(self.precision.precision), inference_config={}, owner="Fabric")

    @override
    def _setup_distributed(self) -> None:
        # No device-index check: every HPU process uses the unindexed device its bridge binds to its local rank.
        reset_seed()
        self._set_world_ranks()
        self._init_deepspeed_distributed()
        if not self._config_initialized:
            self._format_config()
            self._config_initialized = True

    @override
    def _initialize_engine(
        self, model: Module, optimizer: Optimizer | None = None, scheduler: Any = None
    ) -> tuple[DeepSpeedEngine, Optimizer, Any]:
        assert self.config is not None
        root_device = None if self.zero_stage_3 else self.root_device
        return initialize_engine(model, self.config, self.local_rank, root_device, optimizer, scheduler)

    @classmethod
    @override
    def register_strategies(cls, strategy_registry: _StrategyRegistry) -> None:
        register_deepspeed_presets(cls, strategy_registry)
