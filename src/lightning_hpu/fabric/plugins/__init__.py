"""HPU plugins for Lightning Fabric: precision (plain, FSDP, DeepSpeed) and checkpoint IO.

Also lightning-habana's ``lightning_habana.fabric.plugins`` (``HPUPrecision``, ``HPUFSDPPrecision``,
``HPUCheckpointIO``).
"""

from lightning_hpu.fabric.plugins.checkpoint_io import HPUCheckpointIO
from lightning_hpu.fabric.plugins.deepspeed_precision import HPUDeepSpeedPrecision
from lightning_hpu.fabric.plugins.fsdp_precision import HPUFSDPPrecision
from lightning_hpu.fabric.plugins.precision import HPUPrecision

__all__ = ["HPUCheckpointIO", "HPUDeepSpeedPrecision", "HPUFSDPPrecision", "HPUPrecision"]
