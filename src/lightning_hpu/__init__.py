"""lightning-hpu: PyTorch Lightning on Intel Gaudi accelerators (HPUs).

Importing the package registers ``accelerator="hpu"`` and the HPU strategies with Lightning's Trainer and Fabric;
it opens no device and starts no process. Without a Gaudi, set ``LIGHTNING_HPU_BACKEND=cpu`` to run everything on
the CPU stand-in.
"""

from lightning_hpu.accelerator import HPUAccelerator
from lightning_hpu.plugins import HPUCheckpointIO, HPUPrecisionPlugin
from lightning_hpu.registration import register_all
from lightning_hpu.runtime import HPUNotAvailableError, get_backend
from lightning_hpu.strategies import HPUDeepSpeedStrategy, SingleHPUStrategy, mark_step

__version__ = "0.1.0"

__all__ = [
    "HPUAccelerator",
    "HPUCheckpointIO",
    "HPUDeepSpeedStrategy",
    "HPUNotAvailableError",
    "HPUPrecisionPlugin",
    "SingleHPUStrategy",
    "__version__",
    "get_backend",
    "mark_step",
]

register_all()
