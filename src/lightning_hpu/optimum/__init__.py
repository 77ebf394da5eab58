"""Coming from optimum-habana: its ``gaudi_config.json`` and training options, on Lightning's Trainer and Fabric."""

from lightning_hpu.optimum.finite_mean import FiniteMean
from lightning_hpu.optimum.gaudi_config import GaudiConfig
from lightning_hpu.optimum.loss_logger import HPULossLogger

__all__ = ["FiniteMean", "GaudiConfig", "HPULossLogger"]
