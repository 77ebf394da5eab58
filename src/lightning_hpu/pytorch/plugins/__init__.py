"""HPU plugins: checkpoint IO and precision (also under DeepSpeed)."""

from lightning_hpu.checkpoint.io import HPUCheckpointIO
from lightning_hpu.pytorch.plugins.async_checkpoint_io import HPUAsyncCheckpointIO
from lightning_hpu.pytorch.plugins.deepspeed_precision import HPUDeepSpeedPrecisionPlugin
from lightning_hpu.pytorch.plugins.fsdp_precision import HPUFSDPPrecisionPlugin
from lightning_hpu.pytorch.plugins.model_parallel_precision import HPUModelParallelPrecisionPlugin
from lightning_hpu.pytorch.plugins.precision import HPUPrecisionPlugin
from lightning_hpu.support.old_paths import names_of

__all__ = [
    "HPUAsyncCheckpointIO",
    "HPUCheckpointIO",
    "HPUDeepSpeedPrecisionPlugin",
    "HPUFSDPPrecisionPlugin",
    "HPUModelParallelPrecisionPlugin",
    "HPUPrecisionPlugin",
]


#: lightning-habana's names of this module path (docs/guide/coming-from-lightning-habana.md), read when first asked.
__getattr__ = names_of(__name__)
