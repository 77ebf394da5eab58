"""The stand-in's graph caches, as the bridge has them: ``ModuleCacher`` (training), ``wrap_in_hpu_graph`` (inference).

Both patch ``module.forward`` in place and keep one graph per key (:mod:`.keys`: shapes, view layout, autocast
state, other arguments by value; no dtype). The policy is the bridge's (``hpu/graphs.py``):

- **No eviction.** While a cache holds fewer than ``max_graphs`` graphs, a new key is captured; once it is full, a
  new key runs the original forward uncached (eagerly) and known keys keep replaying. Nothing is ever dropped except
  by ``module.clear_cache()`` (``wrap_in_hpu_graph`` only).
- **No dtype in the key.** The same shapes in another dtype replay the graph captured first: the inputs are cast into
  its buffers and the outputs keep its dtypes. A Gaudi does this silently; the stand-in warns once per cached graph
  and new dtypes (:class:`HPUGraphDtypeWarning`).
- ``wrap_in_hpu_graph`` captures on the first call with a new key and returns that call's outputs; later calls copy
  their inputs into the first call's input tensors (unless ``disable_tensor_cache``) and replay, returning the same
  output tensors.
- ``ModuleCacher`` graphs forward and backward (``make_graphed_callables``) per key, only while
  ``model.training and torch.is_grad_enabled()`` and ``PT_HPU_LAZY_MODE`` is exactly ``"1"`` (read when the cacher
  is made, as the bridge does); otherwise it runs the original forward. Its key is taken on the full argument list,
  defaults filled in. With ``use_lfu`` it graphs only the ``max_graphs`` most frequent keys counted between
  ``model.capture_start()`` and ``model.capture_end()``.
"""

from __future__ import annotations

import copy
import functools
import logging
import os
import warnings
from collections import Counter
from collections.abc import Callable
from typing import Any, Protocol

import torch
from torch import Tensor
from torch.nn import Module

from gaudi_standin.emulator.environment import LAZY_MODE_ENV
from gaudi_standin.graphs.graphed_callables import standin_make_graphed_callables
from gaudi_standin.graphs.keys import ForwardSignature, call_key, rebuild, unhashable_argument, walk
from gaudi_standin.graphs.standin_graph import GraphCounters, StandInGraph, standin_capture

log = logging.getLogger(__name__)

DISABLE_TENSOR_CACHE_ENV = "PT_HPUGRAPH_DISABLE_TENSOR_CACHE"
DRY_RUN_ENV = "PT_HPUGRAPH_ENABLE_DRY_RUN"


class CacheCounters(GraphCounters, Protocol):
    """What a stand-in cache reports to (the stand-in backend's counters)."""

    mark_steps: int
    graph_cache_hits: int
    graph_cache_inserts: int
    graph_cache_uncached: int


class HPUGraphDtypeWarning(UserWarning):
    """A cached HPU graph was replayed with inputs of another dtype than it was captured with (they are cast)."""


class _CastWatch:
    """Warns once per new dtype combination that a graph's inputs are cast into its captured buffers."""

    __slots__ = ("captured", "seen")

    def __init__(self, tensors: list[Tensor]) -> None:
        self.captured = tuple(t.dtype for t in tensors)
        self.seen = {self.captured}

    def check(self, tensors: list[Tensor]) -> None:
        given = tuple(t.dtype for t in tensors)
        if given not in self.seen:
            self.seen.add(given)
            warnings.warn(
                f"An HPU graph captured for input dtypes {_names(self.captured)} is replayed with {_names(given)}:"
                " graph caches key on shapes, not dtypes, so the inputs are cast into the captured buffers and the"
                " outputs keep the captured dtypes, as on a Gaudi (which does this without a warning). Cast the"
                " inputs yourself, or graph a separate module per dtype.",
                HPUGraphDtypeWarning,
                stacklevel=4,
            )


def _names(dtypes: tuple[torch.dtype, ...]) -> str:
    return "(" + ", ".join(str(d).removeprefix("torch.") for d in dtypes) + ")"


def _env_flag(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    return default if value is None else value == "1"


def _lookup(cache: dict[Any, Any], key: Any) -> Any:
    try:
        return cache.get(key)
    except TypeError as error:
        raise unhashable_argument(error) from None


# --------------------------------------------------------------------------------------------- wrap_in_hpu_graph
class _InferenceGraph:
    """One cached inference graph: its input buffers (the capturing call's tensors) and its outputs."""

    __slots__ = ("graph", "inputs", "outputs", "watch")

    def __init__(self, graph: StandInGraph, inputs: list[Tensor], outputs: Any) -> None:
        self.graph = graph
        self.inputs = inputs
        self.outputs = outputs
        self.watch = _CastWatch(inputs)

    def replay(self, given: list[Tensor], asynchronous: bool) -> None:
        cast = False
        for static, tensor in zip(self.inputs, given, strict=True):
            if static is not tensor:
                cast = cast or static.dtype != tensor.dtype
                static.copy_(tensor)
        if cast:
            self.watch.check(given)
        self.graph.replay(asynchronous)


def standin_wrap_in_hpu_graph(
    module: Module,
    counters: CacheCounters,
    asynchronous: bool = False,
    disable_tensor_cache: bool = False,
    dry_run: bool | None = None,
    max_graphs: int | None = None,
) -> Module:
    """Patch ``module.forward`` to capture once per key while there is room, and replay known keys."""
    original = module.forward
    cache: dict[Any, _InferenceGraph] = {}
    no_tensor_cache = _env_flag(DISABLE_TENSOR_CACHE_ENV, disable_tensor_cache)

    @functools.wraps(original)  # keeps the module's forward signature, which callers inspect (Transformers' generate)
    def forward(*args: Any, **kwargs: Any) -> Any:
        warmup_mode = kwargs.pop("warmup_mode", False)
        if kwargs.pop("bypass_hpu_graphs", False):
            return original(*args, **kwargs)
        kwargs.pop("cache_tensors_list", None)
        tensors: list[Tensor] = []
        key = call_key(args, kwargs, tensors)
        cached = _lookup(cache, key)
        if cached is not None:
            counters.graph_cache_hits += 1
            if warmup_mode:
                counters.mark_steps += 1  # the bridge marks a step instead of replaying
            else:
                cached.replay(tensors, asynchronous)
            return cached.outputs
        if max_graphs is not None and len(cache) >= max_graphs:
            counters.graph_cache_uncached += 1
            return original(*args, **kwargs)
        if no_tensor_cache:
            # The graph keeps its own input buffers instead of holding on to the caller's tensors.
            tensors = [t.clone() for t in tensors]
            args, kwargs = rebuild((args, kwargs), tensors)
        graph = StandInGraph(counters)
        # As the bridge's: without the tensor cache the capture is a dry run, and a dry run is replayed once.
        dry = bool(dry_run) or no_tensor_cache
        with standin_capture(graph, dry_run=dry):
            outputs = original(*args, **kwargs)
        if dry:
            graph.replay(asynchronous)
        cache[key] = _InferenceGraph(graph, tensors, outputs)
        counters.graph_cache_inserts += 1
        return outputs

    def clear_cache() -> None:
        cache.clear()

    def clear_inputs() -> None:
        for entry in cache.values():
            entry.graph.clear_inputs()

    module.forward = forward
    module.clear_cache = clear_cache  # type: ignore[assignment]
    module.clear_inputs = clear_inputs  # type: ignore[assignment]
    return module


# --------------------------------------------------------------------------------------------- ModuleCacher
class _FlatForward(Module):
    """The forward as ``make_graphed_callables`` needs it: the call's tensors in, a tuple of tensors out."""

    def __init__(
        self, model: Module, original: Callable[..., Any], signature: ForwardSignature, values: tuple[Any, ...]
    ) -> None:
        super().__init__()
        self.model = model
        self._original = original
        self._signature = signature
        self._values = values
        self.out_template: Any = None

    def forward(self, *tensors: Tensor) -> tuple[Tensor, ...]:
        out = self._signature.call(self._original, rebuild(self._values, tensors))
        self.out_template = out
        out_tensors: list[Tensor] = []
        walk((out,), out_tensors)
        return tuple(out_tensors)


class _TrainingGraph:
    """One cached training graph: the graphed forward (its backward is graphed too) and how to unpack its outputs."""

    __slots__ = ("graphed", "single", "template", "watch")

    def __init__(self, graphed: Callable[..., Any], template: Any, tensors: list[Tensor]) -> None:
        self.graphed = graphed
        self.template = template
        self.single = isinstance(template, Tensor)
        self.watch = _CastWatch(tensors)

    def __call__(self, tensors: list[Tensor]) -> Any:
        for static_dtype, tensor in zip(self.watch.captured, tensors, strict=True):
            if tensor.dtype != static_dtype:
                self.watch.check(tensors)
                break
        outs = self.graphed(*tensors)
        return outs[0] if self.single else rebuild(self.template, outs)


class StandInModuleCacher:
    """The stand-in for the bridge's ``ModuleCacher(max_graphs)``."""

    def __init__(self, max_graphs: int, counters: CacheCounters) -> None:
        self.max_graphs = max_graphs
        self._counters = counters
        # The bridge's gate, read here as the bridge reads it: exactly "1" (not merely "not 0").
        self.use_lazy_mode = os.environ.get(LAZY_MODE_ENV) == "1"
        self._graphs: dict[Any, _TrainingGraph] = {}
        self._key_counts: Counter[Any] = Counter()
        self.priority_keys: set[Any] = set()
        self.is_capturing = False
        self.hpugraph_tracing = False
        self.iteration_cnt = -1
        self.forward_cnt = 0
        self.set_iterations_call_cnt = 0

    def __call__(
        self,
        model: Module,
        use_lfu: bool = False,
        inplace: bool = True,
        allow_unused_input: bool = False,
        asynchronous: bool = False,
        have_grad_accumulation: bool = False,
        log_frequency: int = 100,
        verbose: bool = False,
        disable_tensor_cache: bool = False,
        dry_run: bool = False,
    ) -> Module:
        if not inplace:
            model = copy.copy(model)
        original = model.forward
        signature = ForwardSignature(original, type(model).__name__)
        self.use_lfu = use_lfu
        self.have_grad_accumulation = have_grad_accumulation
        self._options = dict(
            allow_unused_input=allow_unused_input,
            asynchronous=asynchronous,
            # As the bridge's: without the tensor cache the captures are dry runs (replays alone update state).
            dry_run=_env_flag(DRY_RUN_ENV, dry_run) or _env_flag(DISABLE_TENSOR_CACHE_ENV, disable_tensor_cache),
        )

        @functools.wraps(original)  # keeps the module's forward signature, as the bridge's wrapper does
        def forward(*args: Any, **kwargs: Any) -> Any:
            self.iteration_cnt += 1
            values = signature.bind(args, kwargs)
            tensors: list[Tensor] = []
            key: Any = (walk(values, tensors), torch.is_autocast_enabled("cpu"))
            if self.have_grad_accumulation and self.forward_cnt == 0:
                key = (key, "first micro-batch")  # its graph writes .grad; later micro-batches accumulate
            if verbose and self.iteration_cnt % log_frequency == 0:
                self.log_stats()
            if use_lfu and self.is_capturing:
                self._key_counts[key] += 1
            elif model.training and torch.is_grad_enabled() and self.use_lazy_mode:
                entry = _lookup(self._graphs, key)
                if entry is not None:
                    self._counters.graph_cache_hits += 1
                    return entry(tensors)
                room = key in self.priority_keys if use_lfu else len(self._graphs) < self.max_graphs
                if room:
                    return self._insert(key, model, original, signature, values, tensors)(tensors)
            self._counters.graph_cache_uncached += 1
            return original(*args, **kwargs)

        model.orig_forward = original  # type: ignore[assignment]
        model.forward = forward
        model.set_iteration_count = self.set_iteration_count  # type: ignore[assignment]
        model.capture_start = self.capture_start  # type: ignore[assignment]
        model.capture_end = self.capture_end  # type: ignore[assignment]
        model.is_hpugraph_tracing = self.is_hpugraph_tracing  # type: ignore[assignment]
        model.graph_cacher = self  # type: ignore[assignment]
        return model

    def _insert(
        self,
        key: Any,
        model: Module,
        original: Callable[..., Any],
        signature: ForwardSignature,
        values: tuple[Any, ...],
        tensors: list[Tensor],
    ) -> _TrainingGraph:
        self.hpugraph_tracing = True
        try:
            flat = _FlatForward(model, original, signature, values)
            graphed = standin_make_graphed_callables(flat, tuple(tensors), counters=self._counters, **self._options)
        finally:
            self.hpugraph_tracing = False
        entry = _TrainingGraph(graphed.forward, flat.out_template, tensors)
        self._graphs[key] = entry
        self._counters.graph_cache_inserts += 1
        return entry

    def set_iteration_count(self, iter_num: int) -> None:
        """Grad accumulation: the micro-batch index within the step (0 is the first, which has its own graph)."""
        self.forward_cnt = iter_num
        self.set_iterations_call_cnt += 1

    def is_hpugraph_tracing(self) -> bool:
        """Whether a graph is being captured right now."""
        return self.hpugraph_tracing

    def capture_start(self) -> None:
        """LFU: start counting input keys (calls run eagerly meanwhile)."""
        self.is_capturing = True

    def capture_end(self) -> None:
        """LFU: keep the ``max_graphs`` most frequent keys counted since :meth:`capture_start`."""
        self.priority_keys = {key for key, _ in self._key_counts.most_common(self.max_graphs)}
        self.is_capturing = False
        self._key_counts.clear()

    @property
    def num_graphs(self) -> int:
        return len(self._graphs)

    def log_stats(self) -> None:
        log.info(
            "HPU graph cache: %d graphs of at most %d, %d forwards",
            len(self._graphs),
            self.max_graphs,
            self.iteration_cnt + 1,
        )
