"""``habana_frameworks.torch.hpu.graphs`` on the stand-in: the HPU-graph API, the same objects as ``torch.hpu``'s.

As in the bridge, the API serves lazy mode only: in eager mode the module imports, but its names are missing
(``AttributeError`` with the package's sentence on what to do), as the ``hpu`` package serves them. The helpers that
hold no graph (``CachedParams``, ``copy_to``, ``TensorPacker``, ``input_hash``) are here in both modes.
"""

from __future__ import annotations

from typing import Any

from gaudi_standin.bridge.habana_frameworks.torch import hpu
from gaudi_standin.graphs.helpers import CachedParams, TensorPacker, copy_to  # noqa: F401 (in __all__)

__all__ = [*hpu.GRAPH_API, "input_hash"]

input_hash = hpu.input_hash


def __getattr__(name: str) -> Any:
    """``HPUGraph``, ``graph``, ``make_graphed_callables``, ``ModuleCacher``, ``wrap_in_hpu_graph`` (lazy mode)."""
    if name not in hpu.GRAPH_API:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(hpu, name)
