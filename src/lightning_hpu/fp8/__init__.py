"""fp8 on Gaudi2 and later: training with the Transformer Engine, inference with Intel Neural Compressor.

The Trainer callback :class:`~lightning_hpu.HPUFp8Inference` is in :mod:`lightning_hpu.pytorch.callbacks`.

Imports (the layering test checks this paragraph): no Lightning package (Lightning-free, with all it imports); of
this package, ``device``, ``runtime`` and ``support``.
"""

from lightning_hpu.fp8.engine import LayerFilter, make_recipe, replace_linear_layers
from lightning_hpu.fp8.inference import fp8_finish_measurement, fp8_measure, fp8_quantize
from lightning_hpu.support.old_paths import moved_names_of

__all__ = [
    "LayerFilter",
    "fp8_finish_measurement",
    "fp8_measure",
    "fp8_quantize",
    "make_recipe",
    "replace_linear_layers",
]

#: 0.1.0's names that moved out of this package, read from their new path with a DeprecationWarning.
__getattr__ = moved_names_of(__name__)
