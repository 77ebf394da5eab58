"""Registering HPU names with Lightning's registries and connectors (by ``import lightning_hpu``, and by
:mod:`lightning_hpu_autoload` when Lightning is imported)."""

from __future__ import annotations

from lightning.fabric.accelerators import ACCELERATOR_REGISTRY as FABRIC_ACCELERATOR_REGISTRY
from lightning.fabric.strategies import STRATEGY_REGISTRY as FABRIC_STRATEGY_REGISTRY
from lightning.pytorch.accelerators import AcceleratorRegistry
from lightning.pytorch.strategies import StrategyRegistry

from lightning_hpu import integration
from lightning_hpu.fabric.accelerator import HPUAccelerator as FabricHPUAccelerator
from lightning_hpu.fabric.strategies import HPUParallelStrategy as FabricHPUParallelStrategy
from lightning_hpu.fabric.strategies import SingleHPUStrategy as FabricSingleHPUStrategy
from lightning_hpu.fabric.strategies.deepspeed import HPUDeepSpeedStrategy as FabricHPUDeepSpeedStrategy
from lightning_hpu.fabric.strategies.fsdp import HPUFSDPStrategy as FabricHPUFSDPStrategy
from lightning_hpu.integration.quiet_warnings import hide_lightning_noise
from lightning_hpu.pytorch.accelerator import HPUAccelerator
from lightning_hpu.pytorch.strategies import HPUDeepSpeedStrategy, HPUParallelStrategy, SingleHPUStrategy
from lightning_hpu.pytorch.strategies.fsdp import HPUFSDPStrategy
from lightning_hpu.pytorch.strategies.model_parallel import HPUModelParallelStrategy


def register_all() -> None:
    """Register the accelerator and strategies for the Trainer and Fabric, and teach their connectors HPU."""
    if "hpu" not in AcceleratorRegistry:
        HPUAccelerator.register_accelerators(AcceleratorRegistry)
    if "hpu" not in FABRIC_ACCELERATOR_REGISTRY:
        FabricHPUAccelerator.register_accelerators(FABRIC_ACCELERATOR_REGISTRY)
    for strategy_cls in (
        SingleHPUStrategy,
        HPUParallelStrategy,
        HPUDeepSpeedStrategy,
        HPUFSDPStrategy,
        HPUModelParallelStrategy,
    ):
        if strategy_cls.strategy_name not in StrategyRegistry:
            strategy_cls.register_strategies(StrategyRegistry)
    for fabric_strategy_cls in (
        FabricSingleHPUStrategy,
        FabricHPUParallelStrategy,
        FabricHPUDeepSpeedStrategy,
        FabricHPUFSDPStrategy,
    ):
        if fabric_strategy_cls.strategy_name not in FABRIC_STRATEGY_REGISTRY:
            fabric_strategy_cls.register_strategies(FABRIC_STRATEGY_REGISTRY)
    integration.install()
    hide_lightning_noise()
