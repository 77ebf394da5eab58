"""``habana_frameworks.torch.hpex.kernels.Fp8Ops`` (bridge releases after 1.19): Python entry points of the fp8 ops.

Each calls the ``torch.ops.hpu`` op of the same name (:mod:`gaudi_standin.ops.fp8`), with its arguments.
"""

from __future__ import annotations

from typing import Any

import torch

import gaudi_standin.ops.fp8  # noqa: F401 (defines the ops called here)

__all__ = ["cast_from_fp8", "cast_to_fp8_hybrid", "cast_to_fp8_v2", "fp8_gemm_v2"]


def cast_to_fp8_v2(*args: Any, **kwargs: Any) -> Any:
    """``torch.ops.hpu.cast_to_fp8_v2``: ``(fp8 tensor, amax)``."""
    return torch.ops.hpu.cast_to_fp8_v2(*args, **kwargs)


def cast_from_fp8(*args: Any, **kwargs: Any) -> Any:
    """``torch.ops.hpu.cast_from_fp8``."""
    return torch.ops.hpu.cast_from_fp8(*args, **kwargs)


def cast_to_fp8_hybrid(*args: Any, **kwargs: Any) -> Any:
    """``torch.ops.hpu.cast_to_fp8_hybrid``: ``(e5m2 tensor, e4m3 tensor, amax)``."""
    return torch.ops.hpu.cast_to_fp8_hybrid(*args, **kwargs)


def fp8_gemm_v2(*args: Any, **kwargs: Any) -> Any:
    """``torch.ops.hpu.fp8_gemm_v2``."""
    return torch.ops.hpu.fp8_gemm_v2(*args, **kwargs)
