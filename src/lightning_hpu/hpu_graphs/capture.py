"""Manual capture and replay: :class:`HPUGraph` and the :func:`graph` context manager.

On a Gaudi these are the bridge's ``HPUGraph`` and ``graph``; on the CPU stand-in they record and replay the aten
ops of the captured region. The graph rules hold on both: Python
runs only during the capture, so a branch taken then is taken at every replay; replay reads the tensors the capture
read (copy new data into them) and writes the tensors the capture wrote. A host sync inside a capture (``.item()``,
``if tensor:``) raises ``HostSyncInCaptureError`` on the stand-in; a Gaudi raises nothing but freezes the value
read during the capture into the graph, so the stand-in's error marks a bug either way.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from lightning_hpu.hpu_graphs.rules import graphs_backend
from lightning_hpu.runtime import HPUBackend
from lightning_hpu.runtime.base import GraphHandle


class HPUGraph:
    """One captured graph (lazy mode only): ``capture_begin``/``capture_end``, then ``replay`` any number of times."""

    def __init__(self) -> None:
        self._backend: HPUBackend = graphs_backend()
        self.handle: GraphHandle = self._backend.new_graph()

    def capture_begin(self, dry_run: bool = False) -> None:
        """Start capturing the work that follows (prefer the :func:`graph` context manager)."""
        self.handle.capture_begin(dry_run=dry_run)

    def capture_end(self) -> None:
        """End the capture; :meth:`replay` may be called from now on."""
        self.handle.capture_end()

    def replay(self, asynchronous: bool = False) -> None:
        """Run the captured work again on the captured tensors."""
        self.handle.replay(asynchronous=asynchronous)

    def reset(self) -> None:
        """Free the captured graph and its memory."""
        self.handle.reset()


def graph(hpu_graph: HPUGraph, stream: Any = None, dry_run: bool = False) -> AbstractContextManager[Any]:
    """Capture the body of the ``with`` block into ``hpu_graph``.

    Example::

        g = HPUGraph()
        with graph(g):
            static_loss = loss_fn(model(static_input), static_target)
            static_loss.backward()
            optimizer.step()
        static_input.copy_(next_input)
        g.replay()  # static_loss now holds the loss of next_input
    """
    if not isinstance(hpu_graph, HPUGraph):
        raise TypeError(
            f"`hpu_graph` must be a lightning_hpu.hpu_graphs.HPUGraph, got {type(hpu_graph).__name__}:"
            " create one with `HPUGraph()`."
        )
    return hpu_graph._backend.graph_capture(hpu_graph.handle, stream=stream, dry_run=dry_run)
