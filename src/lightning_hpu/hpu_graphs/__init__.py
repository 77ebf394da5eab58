"""HPU graphs: capture a region of work once, replay it without Python (lazy mode only).

Four ways, as on the bridge: :class:`HPUGraph` with :func:`graph` (manual capture and replay),
:func:`make_graphed_callables`, :class:`ModuleCacher` (training, per input shape) and :func:`wrap_in_hpu_graph`
(inference, per input shape); the Trainer callback :class:`~lightning_hpu.HPUGraphs` applies the last two to a
LightningModule. Each calls the bridge's function of the same name; on the CPU stand-in they really capture and
replay (its ``gaudi_standin.graphs``).

Imports (the layering test checks this paragraph): no Lightning package (Lightning-free, with all it imports); of
this package, ``runtime`` and ``support``.
"""

from lightning_hpu.hpu_graphs.capture import HPUGraph, graph
from lightning_hpu.hpu_graphs.rules import HPUGraphsUnavailableError
from lightning_hpu.hpu_graphs.wrappers import ModuleCacher, make_graphed_callables, wrap_in_hpu_graph
from lightning_hpu.runtime.graph_options import GraphedCallablesOptions, InferenceGraphOptions, ModuleCacherOptions
from lightning_hpu.support.old_paths import moved_names_of

__all__ = [
    "GraphedCallablesOptions",
    "HPUGraph",
    "HPUGraphsUnavailableError",
    "InferenceGraphOptions",
    "ModuleCacher",
    "ModuleCacherOptions",
    "graph",
    "make_graphed_callables",
    "wrap_in_hpu_graph",
]

#: 0.1.0's names that moved out of this package, read from their new path with a DeprecationWarning.
__getattr__ = moved_names_of(__name__)
