"""HPU strategies for the Lightning Trainer."""

from lightning_hpu.strategies.deepspeed import HPUDeepSpeedStrategy
from lightning_hpu.strategies.fsdp import HPUFSDPStrategy
from lightning_hpu.strategies.hccl import FabricHCCLCollectivesHooks, HCCLCollectivesHooks
from lightning_hpu.strategies.lazy_mode import HPUStrategyHooks, mark_step
from lightning_hpu.strategies.model_parallel import HPUModelParallelStrategy
from lightning_hpu.strategies.parallel import HPUParallelStrategy
from lightning_hpu.strategies.sigterm import SigtermAgreement
from lightning_hpu.strategies.single import SingleHPUStrategy

__all__ = [
    "FabricHCCLCollectivesHooks",
    "HCCLCollectivesHooks",
    "HPUDeepSpeedStrategy",
    "HPUFSDPStrategy",
    "HPUModelParallelStrategy",
    "HPUParallelStrategy",
    "HPUStrategyHooks",
    "SigtermAgreement",
    "SingleHPUStrategy",
    "mark_step",
]
