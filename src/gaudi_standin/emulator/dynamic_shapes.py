"""The graph compiler's dynamic-shape switch on the stand-in, and what it changes in recipe counting.

Habana's graph compiler builds a recipe for the concrete shapes of a graph. With dynamic shapes on
(``PT_HPU_ENABLE_REFINE_DYNAMIC_SHAPES=1``, or ``torch.hpu.enable_dynamic_shape()``) it compiles a graph for ranges
of sizes instead, so new sizes of a graph it has seen reuse its recipe. The stand-in models that by keying its
recipe counts (lazy mode's graph cache, ``torch.compile``'s recipes) on tensor ranks instead of sizes while the
switch is on. The bridge's calls override the environment variable for the rest of the process.
"""

from __future__ import annotations

import os
from typing import Any

REFINE_DYNAMIC_SHAPES_ENV = "PT_HPU_ENABLE_REFINE_DYNAMIC_SHAPES"

_override: bool | None = None


def enabled() -> bool:
    """Whether dynamic shapes are on: the last ``enable``/``disable`` call, else the environment (default off)."""
    if _override is not None:
        return _override
    return os.environ.get(REFINE_DYNAMIC_SHAPES_ENV, "0").strip().lower() in ("1", "true", "yes", "on")


def set_enabled(flag: bool | None) -> None:
    """Switch dynamic shapes on or off for this process (``None``: follow the environment again)."""
    global _override
    _override = flag


def shape_key(shape: tuple[int, ...]) -> Any:
    """What of a tensor's shape a recipe is specific to: the sizes, or only the rank while dynamic shapes are on."""
    return len(shape) if enabled() else shape


def enable_optim_output_sif() -> None:
    """The bridge's switch to an optimised inference of dynamic graphs' output shapes: a compile-time choice of its
    graph compiler, with the same results and recipes either way, so nothing changes on the stand-in."""


def disable_optim_output_sif() -> None:
    """The bridge's switch back to its default output-shape inference (see :func:`enable_optim_output_sif`)."""
