"""HPU graphs: capture a region of work once, replay it without Python (lazy mode only).

Four ways, as on the bridge: :class:`HPUGraph` with :func:`graph` (manual capture and replay),
:func:`make_graphed_callables`, :class:`ModuleCacher` (training, per input shape) and :func:`wrap_in_hpu_graph`
(inference, per input shape); plus :class:`HPUGraphs`, the Lightning callback that applies the last two to a
LightningModule. On the CPU stand-in the same calls really capture and replay (see ``runtime/standin/graphs.py``).
"""

from lightning_hpu.hpu_graphs.callback import HPUGraphs
from lightning_hpu.hpu_graphs.capture import HPUGraph, graph
from lightning_hpu.hpu_graphs.rules import HPUGraphsUnavailableError
from lightning_hpu.hpu_graphs.wrappers import ModuleCacher, make_graphed_callables, wrap_in_hpu_graph
from lightning_hpu.runtime.standin.graph_caches import HPUGraphDtypeWarning
from lightning_hpu.runtime.standin.graphs import HostSyncInCaptureError

__all__ = [
    "HPUGraph",
    "HPUGraphDtypeWarning",
    "HPUGraphs",
    "HPUGraphsUnavailableError",
    "HostSyncInCaptureError",
    "ModuleCacher",
    "graph",
    "make_graphed_callables",
    "wrap_in_hpu_graph",
]
