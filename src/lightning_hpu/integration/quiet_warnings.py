"""Warnings Lightning raises on every fit that tell the user nothing they can act on: hidden, each named exactly.

Each entry names one warning (category, message, the Lightning module that raises it), so nothing else is hidden.
The filters are appended: a filter the user set earlier (``python -W error``, ``warnings.simplefilter``) still wins.
"""

from __future__ import annotations

import re
import warnings

from lightning_hpu.precision.names import PRECISIONS

#: The precisions whose weights stay fp32 (autocast around them), which Lightning's model summary does not size.
_FP32_WEIGHTS = "|".join(re.escape(name) for name, meaning in PRECISIONS.items() if meaning.mixed)

#: (category, message regex, module regex, why it says nothing to the user).
LIGHTNING_NOISE: tuple[tuple[type[Warning], str, str, str], ...] = (
    (
        FutureWarning,
        r"`isinstance\(treespec, LeafSpec\)` is deprecated",
        r"lightning\.pytorch\.utilities\._pytree",
        "Lightning 2.6's CombinedLoader uses torch's pytree LeafSpec, which torch 2.10+ deprecates",
    ),
    (
        UserWarning,
        rf"Precision ({_FP32_WEIGHTS}) is not supported by the model summary",
        r"lightning\.pytorch\.utilities\.model_summary\.model_summary",
        "under mixed precision (and fp8) the weights stay fp32, so the summary's 32-bit size estimate is right",
    ),
)


def hide_lightning_noise() -> None:
    """Append ignore filters for :data:`LIGHTNING_NOISE` (idempotent: ``warnings`` drops duplicate filters)."""
    for category, message, module, _why in LIGHTNING_NOISE:
        warnings.filterwarnings("ignore", message=message, category=category, module=module, append=True)
