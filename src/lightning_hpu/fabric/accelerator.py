"""Fabric's HPU accelerator: :class:`~lightning_hpu.fabric.HPUAccelerator`, a Lightning Fabric ``Accelerator``.

It lives below both trees (:mod:`lightning_hpu.device.accelerator`), as Lightning's own Fabric ``Accelerator`` is the
base of the Trainer's: the Trainer's :class:`~lightning_hpu.HPUAccelerator` extends it.
"""

from lightning_hpu.device.accelerator import HPUAccelerator

__all__ = ["HPUAccelerator"]
