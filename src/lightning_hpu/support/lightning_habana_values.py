"""lightning-habana's functions and flags that lightning-hpu computes (the tables of
:mod:`lightning_hpu.support.old_paths_tables` name them): ``utils.resources``' checks and ``utils.imports``' flags."""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

from lightning_hpu.runtime import get_backend


def is_fp8_available() -> tuple[bool, str]:
    """lightning-habana's ``is_fp8_available()``: whether fp8 runs here, and why not."""
    backend = get_backend()
    available = backend is not None and backend.supports_fp8()
    return available, "" if available else "FP8 not supported on Gaudi, Gaudi2 or higher required"


def is_fp16_available() -> tuple[bool, str]:
    """lightning-habana's ``is_fp16_available()``: whether fp16 runs here, and why not."""
    backend = get_backend()
    available = backend is not None and backend.supports_fp16()
    return available, "" if available else "FP16 not supported on Gaudi, Gaudi2 or higher required."


def get_device_stats(device: Any = None) -> dict[str, Any]:
    """lightning-habana's ``get_device_stats(device)``: the device's memory statistics (the Trainer's accelerator is
    looked up by name, so that this module stays below the Trainer layer)."""
    accelerator = importlib.import_module("lightning_hpu").HPUAccelerator
    return dict(accelerator().get_device_stats(device))


def habana_framework_available() -> bool:
    """``_HABANA_FRAMEWORK_AVAILABLE``: whether ``habana_frameworks`` can be imported."""
    return importlib.util.find_spec("habana_frameworks") is not None


def torchvision_available() -> bool:
    """``_TORCHVISION_AVAILABLE``: whether torchvision is installed."""
    return importlib.util.find_spec("torchvision") is not None


def kineto_available() -> bool:
    """``_KINETO_AVAILABLE``: whether torch's profiler has Kineto."""
    import torch

    return bool(torch.profiler.kineto_available())
