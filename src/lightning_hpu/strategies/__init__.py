"""HPU strategies for the Lightning Trainer."""

from lightning_hpu.strategies.lazy_mode import HPUStrategyHooks, mark_step
from lightning_hpu.strategies.single import SingleHPUStrategy

__all__ = ["HPUStrategyHooks", "SingleHPUStrategy", "mark_step"]
