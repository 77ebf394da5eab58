"""Coming from optimum-habana: its ``gaudi_config.json`` and training options, on Lightning's Trainer and Fabric."""

from lightning_hpu.optimum.gaudi_config import GaudiConfig

__all__ = ["GaudiConfig"]
