"""HPU plugins: checkpoint IO and precision (also under DeepSpeed)."""

from typing import Any

from lightning_hpu.fabric.plugins.checkpoint_io import HPUCheckpointIO
from lightning_hpu.pytorch.plugins.async_checkpoint_io import HPUAsyncCheckpointIO
from lightning_hpu.pytorch.plugins.deepspeed_precision import HPUDeepSpeedPrecisionPlugin
from lightning_hpu.pytorch.plugins.fsdp_precision import HPUFSDPPrecisionPlugin
from lightning_hpu.pytorch.plugins.model_parallel_precision import HPUModelParallelPrecisionPlugin
from lightning_hpu.pytorch.plugins.precision import HPUPrecisionPlugin

__all__ = [
    "HPUAsyncCheckpointIO",
    "HPUCheckpointIO",
    "HPUDeepSpeedPrecisionPlugin",
    "HPUFSDPPrecisionPlugin",
    "HPUModelParallelPrecisionPlugin",
    "HPUPrecisionPlugin",
]


def __getattr__(name: str) -> Any:  # lightning-habana's names of this module path (coming-from-lightning-habana.md)
    from lightning_hpu.support.lightning_habana_paths import names_of

    return names_of(__name__)(name)
