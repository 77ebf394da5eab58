"""Coming from optimum-habana: its ``gaudi_config.json`` and training options, on Lightning's Trainer and Fabric.

``HPULossLogger`` and the callback ``GaudiConfig`` hands the Trainer are in :mod:`lightning_hpu.pytorch.callbacks`.
"""

from lightning_hpu.device.finite_mean import FiniteMean
from lightning_hpu.optimum.gaudi_config import GaudiConfig

__all__ = ["FiniteMean", "GaudiConfig"]
