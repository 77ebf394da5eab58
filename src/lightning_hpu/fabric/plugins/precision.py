"""Fabric's HPU precision plugin: :class:`~lightning_hpu.HPUPrecision`, a Lightning Fabric ``Precision``.

It lives below both trees (:mod:`lightning_hpu.precision.hpu_precision`), as Lightning's Fabric plugins are the base of
the Trainer's: the Trainer's :class:`~lightning_hpu.HPUPrecisionPlugin` extends it.
"""

from lightning_hpu.precision.hpu_precision import HPUPrecision

__all__ = ["HPUPrecision"]
