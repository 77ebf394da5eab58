"""fp8 on Gaudi2 and later: training with the Transformer Engine, inference with Intel Neural Compressor.

The Trainer callback :class:`~lightning_hpu.HPUFp8Inference` is in :mod:`lightning_hpu.pytorch.callbacks`.
"""

from lightning_hpu.fp8.engine import LayerFilter, make_recipe, replace_linear_layers
from lightning_hpu.fp8.inference import fp8_finish_measurement, fp8_measure, fp8_quantize

__all__ = [
    "LayerFilter",
    "fp8_finish_measurement",
    "fp8_measure",
    "fp8_quantize",
    "make_recipe",
    "replace_linear_layers",
]
