"""HPU strategies for the Lightning Trainer, one module each, as for Fabric (:mod:`lightning_hpu.fabric.strategies`)."""

from lightning_hpu.pytorch.strategies.base import HPUStrategyHooks, mark_step
from lightning_hpu.pytorch.strategies.deepspeed import HPUDeepSpeedStrategy
from lightning_hpu.pytorch.strategies.fsdp import HPUFSDPStrategy
from lightning_hpu.pytorch.strategies.hccl import HCCLDDPHooks
from lightning_hpu.pytorch.strategies.model_parallel import HPUModelParallelStrategy
from lightning_hpu.pytorch.strategies.parallel import HPUParallelStrategy
from lightning_hpu.pytorch.strategies.sigterm import SigtermAgreementHooks
from lightning_hpu.pytorch.strategies.single import SingleHPUStrategy
from lightning_hpu.support.old_paths import names_of

__all__ = [
    "HCCLDDPHooks",
    "HPUDeepSpeedStrategy",
    "HPUFSDPStrategy",
    "HPUModelParallelStrategy",
    "HPUParallelStrategy",
    "HPUStrategyHooks",
    "SigtermAgreementHooks",
    "SingleHPUStrategy",
    "mark_step",
]


#: lightning-habana's names of this module path (docs/guide/coming-from-lightning-habana.md), read when first asked.
__getattr__ = names_of(__name__)
