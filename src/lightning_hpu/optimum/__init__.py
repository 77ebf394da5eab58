"""Coming from optimum-habana: its ``gaudi_config.json`` and training options, on Lightning's Trainer and Fabric.

``HPULossLogger`` and the callback ``GaudiConfig`` hands the Trainer are in :mod:`lightning_hpu.pytorch.callbacks`.

Imports (the layering test checks this paragraph): of Lightning, ``lightning.pytorch``; of this package, ``device``,
``fabric``, ``pytorch``, ``runtime`` and ``support``.
"""

from lightning_hpu.device.finite_mean import FiniteMean
from lightning_hpu.optimum.gaudi_config import GaudiConfig
from lightning_hpu.support.old_paths import moved_names_of

__all__ = ["FiniteMean", "GaudiConfig"]

#: 0.1.0's names that moved out of this package, read from their new path with a DeprecationWarning.
__getattr__ = moved_names_of(__name__)
