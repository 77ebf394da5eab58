"""fp8 on Gaudi2 and later: training with the Transformer Engine, inference with Intel Neural Compressor.

The Trainer callback :class:`~lightning_hpu.HPUFp8Inference` (:mod:`lightning_hpu.fp8.callback`) is served here
when first read, so that the fp8 helpers, which Fabric's precision plugins use, do not import the Trainer.
"""

import importlib
from typing import Any

from lightning_hpu.fp8.engine import LayerFilter, make_recipe, replace_linear_layers
from lightning_hpu.fp8.inference import fp8_finish_measurement, fp8_measure, fp8_quantize

__all__ = [
    "HPUFp8Inference",
    "LayerFilter",
    "fp8_finish_measurement",
    "fp8_measure",
    "fp8_quantize",
    "make_recipe",
    "replace_linear_layers",
]


def __getattr__(name: str) -> Any:
    if name == "HPUFp8Inference":
        return importlib.import_module("lightning_hpu.fp8.callback").HPUFp8Inference
    raise AttributeError(f"module 'lightning_hpu.fp8' has no attribute {name!r}")
