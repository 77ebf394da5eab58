"""Deprecation warnings that Lightning raises about its own use of torch, on every fit: hidden, since users cannot act.

Each entry names the warning exactly (category, message, the Lightning module that raises it), so nothing else is
hidden. The filters are appended: a filter the user set earlier (``python -W error``, ``warnings.simplefilter``)
still wins.
"""

from __future__ import annotations

import warnings

#: (category, message regex, module regex): Lightning 2.6's ``CombinedLoader`` uses ``torch.utils._pytree.LeafSpec``,
#: which torch 2.10+ deprecates; it warns once per process at the first fit.
LIGHTNING_TORCH_DEPRECATIONS: tuple[tuple[type[Warning], str, str], ...] = (
    (FutureWarning, r"`isinstance\(treespec, LeafSpec\)` is deprecated", r"lightning\.pytorch\.utilities\._pytree"),
)


def hide_lightning_torch_deprecations() -> None:
    """Append ignore filters for :data:`LIGHTNING_TORCH_DEPRECATIONS` (idempotent: ``warnings`` drops duplicates)."""
    for category, message, module in LIGHTNING_TORCH_DEPRECATIONS:
        warnings.filterwarnings("ignore", message=message, category=category, module=module, append=True)
