"""``transformer_engine.recipe`` on the stand-in: the fp8 formats and the delayed-scaling recipe of Intel's engine.

The formats carry the largest value each fp8 format represents on a Gaudi (``E4M3``: 240, the Gaudi2 range;
``E5M2``: 57344), for the forward tensors (activations, weights) and the backward ones (gradients). ``HYBRID`` is
E4M3 forward and E5M2 backward. ``DelayedScaling`` keeps the engine's fields and defaults; bad values are refused
with one sentence when the recipe is made.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any, NamedTuple

import torch

__all__ = ["DelayedScaling", "Format"]


class _FormatRange(NamedTuple):
    """The largest representable value of the format used forward and backward."""

    max_fwd: float
    max_bwd: float


_E4M3_MAX = 240.0
_E5M2_MAX = 57344.0


class Format(Enum):
    """The fp8 formats: all E4M3, all E5M2, or HYBRID (E4M3 forward, E5M2 for gradients)."""

    E4M3 = _FormatRange(max_fwd=_E4M3_MAX, max_bwd=_E4M3_MAX)
    E5M2 = _FormatRange(max_fwd=_E5M2_MAX, max_bwd=_E5M2_MAX)
    HYBRID = _FormatRange(max_fwd=_E4M3_MAX, max_bwd=_E5M2_MAX)

    def dtype(self, forward: bool) -> torch.dtype:
        """The torch fp8 dtype of this format's forward (activations, weights) or backward (gradient) tensors."""
        e4m3 = self is Format.E4M3 or (self is Format.HYBRID and forward)
        return torch.float8_e4m3fn if e4m3 else torch.float8_e5m2

    def max(self, forward: bool) -> float:
        """The largest value the forward or backward format represents (the scale maps the amax onto it)."""
        return self.value.max_fwd if forward else self.value.max_bwd


class _OverrideLinearPrecision(NamedTuple):
    fprop: bool = False
    dgrad: bool = False
    wgrad: bool = False


@dataclass
class DelayedScaling:
    """Delayed scaling: each fp8 tensor is scaled by a power of two computed from the amax of earlier steps.

    Args:
        margin: the scale is ``2 ** (floor(log2(fp8_max / amax)) - margin)``: a larger margin leaves more headroom.
        interval: recompute the scales every ``interval`` steps (they stay fixed in between).
        fp8_format: :class:`Format` (the engine's default is E5M2).
        amax_history_len: how many steps of amax the scale is computed from.
        amax_compute_algo: ``"most_recent"`` (the last step's amax), ``"max"`` (the largest in the history), or a
            function of the history tensor.
        override_linear_precision: the engine accepts only ``(False, False, False)``.
        scaling_factor_compute_algo: ``(amax, scale, fp8_max, recipe) -> scale`` instead of the formula above.
        reduce_amax: take the maximum amax over the ``fp8_group`` (all processes when ``None``) before scaling.
    """

    margin: int = 0
    interval: int = 1
    fp8_format: Format = Format.E5M2
    amax_history_len: int = 1
    amax_compute_algo: str | Callable[[torch.Tensor], torch.Tensor] = "most_recent"
    override_linear_precision: tuple[bool, bool, bool] = _OverrideLinearPrecision()
    scaling_factor_compute_algo: Callable[..., torch.Tensor] | None = None
    reduce_amax: bool = True

    def __post_init__(self) -> None:
        for name, low in (("margin", 0), ("interval", 1), ("amax_history_len", 1)):
            value: Any = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"DelayedScaling `{name}={value!r}` must be an integer >= {low}.")
        if not isinstance(self.fp8_format, Format):
            raise ValueError(
                f"DelayedScaling `fp8_format={self.fp8_format!r}` must be a recipe.Format (E4M3, E5M2 or HYBRID)."
            )
        if not callable(self.amax_compute_algo) and self.amax_compute_algo not in ("max", "most_recent"):
            raise ValueError(
                f"DelayedScaling `amax_compute_algo={self.amax_compute_algo!r}` must be 'max', 'most_recent' or a"
                " function of the amax history."
            )
        if tuple(self.override_linear_precision) != (False, False, False):
            raise ValueError("DelayedScaling `override_linear_precision` must be (False, False, False).")
