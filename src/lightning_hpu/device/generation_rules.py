"""Precision rules of the device generation: fp16 and fp8 need Gaudi2 or later."""

from __future__ import annotations

from lightning_hpu.runtime import require_backend


def check_fp16_supported() -> None:
    """Refuse fp16 on a first-generation Gaudi, which has no fp16 support."""
    backend = require_backend()
    if not backend.supports_fp16():
        raise ValueError(
            f"fp16 precision needs Gaudi2 or later, but this device is {backend.device_name()};"
            " use precision='bf16-mixed' instead."
        )


def check_fp8_supported() -> None:
    """Refuse fp8 on a first-generation Gaudi, which has no fp8 support."""
    backend = require_backend()
    if not backend.supports_fp8():
        raise ValueError(
            f"fp8 precision needs Gaudi2 or later, but this device is {backend.device_name()};"
            " use precision='bf16-mixed' instead."
        )
