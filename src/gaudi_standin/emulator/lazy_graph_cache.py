"""A model of the graph compiler's cache in lazy mode, so the stand-in can count recompilations.

In lazy mode a Gaudi accumulates the ops issued between two step markers into one graph, and compiles it into a
recipe unless a recipe for the same graph is cached. The cache key is the graph's signature: its ops and the shapes
and dtypes of their inputs (dynamic shapes are off by default, ``PT_HPU_ENABLE_REFINE_DYNAMIC_SHAPES=0``; with them on,
only the ranks count, see :mod:`~gaudi_standin.emulator.dynamic_shapes`). A
host read (``.item()``) ends the graph early, as it forces the device to run what was accumulated.

:class:`LazyGraphCacheModel` records the ops of each segment with a ``TorchDispatchMode`` and looks the finished
signature up in a set: a new one counts as a compilation, a known one as a cache hit. Recording costs a Python call
per op, so it runs only between :meth:`start` and :meth:`stop` (while a recompilation monitor asks).
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode_stack
from torch.utils._pytree import tree_leaves

from gaudi_standin.emulator.counters import StandInCounters
from gaudi_standin.emulator.dynamic_shapes import shape_key

_OpKey = tuple[Any, tuple[tuple[Any, torch.dtype], ...]]

#: Ops that make the device run the accumulated graph (a host read of a device value).
_GRAPH_ENDING_OPS = frozenset({torch.ops.aten._local_scalar_dense.default})


class _SegmentRecorder(TorchDispatchMode):
    """Appends each op with its tensor inputs' shapes and dtypes to the current segment."""

    def __init__(self, model: LazyGraphCacheModel) -> None:
        super().__init__()
        self._model = model

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        # Device work is aten ops on the HPU; host ops, profiler ranges and other namespaces never reach the graph
        # compiler.
        if func.namespace == "aten":
            leaves = tree_leaves((args, kwargs or {}))
            tensors = [leaf for leaf in leaves if isinstance(leaf, torch.Tensor)]
            on_device = any(tensor.device.type == "hpu" for tensor in tensors) or any(
                isinstance(leaf, torch.device) and leaf.type == "hpu" for leaf in leaves
            )
            if on_device:
                inputs = tuple((shape_key(tuple(tensor.shape)), tensor.dtype) for tensor in tensors)
                self._model.segment.append((func, inputs))
        output = func(*args, **(kwargs or {}))
        if func in _GRAPH_ENDING_OPS:
            self._model.end_graph()
        return output


class LazyGraphCacheModel:
    """Counts graph compilations and cache hits of lazy mode into the stand-in's counters."""

    def __init__(self, counters: StandInCounters) -> None:
        self._counters = counters
        self._cache: set[tuple[_OpKey, ...]] = set()
        #: Op sequences (without shapes) already compiled, to tell a new shape from a new graph.
        self._op_sequences: set[tuple[Any, ...]] = set()
        self.segment: list[_OpKey] = []
        self.last_reason: str | None = None
        self._recorder: _SegmentRecorder | None = None

    @property
    def recording(self) -> bool:
        return self._recorder is not None

    def start(self) -> None:
        """Record ops from now on (a segment begins here)."""
        if self._recorder is not None:
            return
        self.segment = []
        self._recorder = _SegmentRecorder(self)
        self._recorder.__enter__()

    def stop(self) -> None:
        """Stop recording; the unfinished segment is dropped."""
        recorder, self._recorder = self._recorder, None
        if recorder is None:
            return
        if recorder in _get_current_dispatch_mode_stack():
            recorder.__exit__(None, None, None)
        self.segment = []

    def end_graph(self) -> None:
        """A step marker (or host read): the ops since the last one form a graph, compiled unless cached."""
        if not self.segment:
            return
        signature = tuple(self.segment)
        self.segment = []
        if signature in self._cache:
            self._counters.lazy_graph_cache_hits += 1
            return
        ops = tuple(op for op, _ in signature)
        if self._in_recipe_cache(signature):
            self._cache.add(signature)
            self._op_sequences.add(ops)
            return
        names = ", ".join(str(op) for op in ops[:4]) + (", ..." if len(ops) > 4 else "")
        if ops in self._op_sequences:
            self.last_reason = f"a new input shape or dtype for a graph of {len(ops)} ops seen before ({names})"
        else:
            self.last_reason = f"a new graph of {len(ops)} ops ({names})"
        self._cache.add(signature)
        self._op_sequences.add(ops)
        self._counters.lazy_graph_compilations += 1

    @staticmethod
    def _in_recipe_cache(signature: tuple[_OpKey, ...]) -> bool:
        """Whether an earlier run left this graph's recipe in the on-disk cache (else it is stored there now)."""
        from gaudi_standin.emulator.recipe_store import RecipeStore, active_store

        store = active_store()
        if store is None:
            return False
        key = RecipeStore.key("lazy", tuple((str(op), inputs) for op, inputs in signature))
        if store.load(key):
            return True
        store.store(key, f"{len(signature)} ops")
        return False
