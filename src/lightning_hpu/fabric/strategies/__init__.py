"""HPU strategies for Lightning Fabric, one module each, as for the Trainer (:mod:`lightning_hpu.pytorch.strategies`).

Also lightning-habana's ``lightning_habana.fabric.strategies`` (``HPUDDPStrategy``, ``HPUParallelStrategy``,
``SingleHPUStrategy``, ``HPUFSDPStrategy``).
"""

from lightning_hpu.fabric.strategies.deepspeed import HPUDeepSpeedStrategy
from lightning_hpu.fabric.strategies.fsdp import HPUFSDPStrategy
from lightning_hpu.fabric.strategies.model_parallel import HPUModelParallelStrategy
from lightning_hpu.fabric.strategies.parallel import HPUDDPStrategy, HPUParallelStrategy
from lightning_hpu.fabric.strategies.single import SingleHPUStrategy

__all__ = [
    "HPUDDPStrategy",
    "HPUDeepSpeedStrategy",
    "HPUFSDPStrategy",
    "HPUModelParallelStrategy",
    "HPUParallelStrategy",
    "SingleHPUStrategy",
]
