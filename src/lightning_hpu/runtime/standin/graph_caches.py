"""The stand-in's graph caches: ``ModuleCacher`` (training) and ``wrap_in_hpu_graph`` (inference).

Both patch ``module.forward`` in place and keep one graph per input key: tensor shapes, dtypes and strides, the
autocast state, and every other argument by value. Both hold at most ``max_graphs`` graphs: a new key arriving at a
full cache evicts the least recently used graph (the cache drops every reference to it, so its captured tensors are
freed once nothing else holds them) and is captured, as this package specifies. On a Gaudi the bridge's own cache
policy applies.

- ``wrap_in_hpu_graph`` captures on the first call with a new key and returns that call's outputs; later calls copy
  their inputs into the first call's input tensors (unless ``disable_tensor_cache``) and replay, returning the same
  output tensors. An evicted key seen again is captured anew.
- ``ModuleCacher`` graphs forward and backward (``make_graphed_callables``) per key, only while
  ``model.training and torch.is_grad_enabled()`` in lazy mode; otherwise it runs the original forward. An evicted
  graph whose backward is still pending stays alive through autograd's saved context until that backward ran, so
  eviction never breaks a step. With ``use_lfu`` it instead caches only the ``max_graphs`` most frequent keys seen
  between ``model.capture_start()`` and ``model.capture_end()`` (other keys run eagerly; nothing is evicted).
"""

from __future__ import annotations

import copy
import inspect
import logging
import os
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import fields, is_dataclass
from typing import Any, Protocol

import torch
from torch import Tensor
from torch.nn import Module
from torch.utils._pytree import tree_flatten, tree_unflatten

from lightning_hpu.runtime.standin.graphed_callables import standin_make_graphed_callables
from lightning_hpu.runtime.standin.graphs import GraphCounters, StandInGraph, standin_capture

log = logging.getLogger(__name__)

DISABLE_TENSOR_CACHE_ENV = "PT_HPUGRAPH_DISABLE_TENSOR_CACHE"
DRY_RUN_ENV = "PT_HPUGRAPH_ENABLE_DRY_RUN"


class CacheCounters(GraphCounters, Protocol):
    """What a stand-in cache reports to (the stand-in backend's counters)."""

    graph_cache_hits: int
    graph_cache_inserts: int
    graph_cache_uncached: int
    graph_cache_evictions: int


def input_key(obj: Any) -> Any:
    """The cache key of a call's inputs: tensor layout (not values), autocast state, other values as they are."""
    if isinstance(obj, Tensor):
        return ("T", tuple(obj.shape), obj.dtype, obj.stride(), obj.device, obj.requires_grad)
    if isinstance(obj, dict):
        return ("D", tuple((k, input_key(v)) for k, v in obj.items()))
    if isinstance(obj, (list, tuple)) and not isinstance(obj, torch.Size):
        return (type(obj).__name__, tuple(input_key(v) for v in obj))
    if is_dataclass(obj) and not isinstance(obj, type):
        return ("C", type(obj).__name__, tuple((f.name, input_key(getattr(obj, f.name))) for f in fields(obj)))
    try:
        hash(obj)
    except TypeError:
        raise TypeError(
            f"An HPU graph cache keys calls on their arguments, but a {type(obj).__name__} cannot be hashed:"
            " pass tensors, numbers, strings, or lists/tuples/dicts/dataclasses of them."
        ) from None
    return obj


def call_key(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return (input_key(args), input_key(kwargs), torch.is_autocast_enabled("cpu"))


def _copy_into(static: list[Tensor], given: list[Tensor]) -> None:
    for dst, src in zip(static, given, strict=True):
        if dst is not src:
            dst.copy_(src)


def _make_room(cache: OrderedDict[Any, Any], max_graphs: int | None, counters: CacheCounters) -> list[Any]:
    """Evict least recently used graphs until a new one fits; returns them so the caller can release them."""
    evicted = []
    while max_graphs is not None and len(cache) >= max_graphs:
        evicted.append(cache.popitem(last=False)[1])
        counters.graph_cache_evictions += 1
    return evicted


def _env_flag(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    return default if value is None else value == "1"


# --------------------------------------------------------------------------------------------- wrap_in_hpu_graph
class _InferenceGraph:
    def __init__(self, graph: StandInGraph, inputs: list[Tensor], outputs: Any) -> None:
        self.graph = graph
        self.inputs = inputs
        self.outputs = outputs


def standin_wrap_in_hpu_graph(
    module: Module,
    counters: CacheCounters,
    asynchronous: bool = False,
    disable_tensor_cache: bool = False,
    dry_run: bool | None = None,
    max_graphs: int | None = None,
) -> Module:
    """Patch ``module.forward`` to capture once per input key and replay afterwards."""
    original = module.forward
    cache: OrderedDict[Any, _InferenceGraph] = OrderedDict()
    no_tensor_cache = _env_flag(DISABLE_TENSOR_CACHE_ENV, disable_tensor_cache)

    def forward(*args: Any, **kwargs: Any) -> Any:
        warmup_mode = kwargs.pop("warmup_mode", False)
        if kwargs.pop("bypass_hpu_graphs", False):
            return original(*args, **kwargs)
        kwargs.pop("cache_tensors_list", None)
        key = call_key(args, kwargs)
        cached = cache.get(key)
        if cached is None:
            _make_room(cache, max_graphs, counters)
            leaves, spec = tree_flatten((args, kwargs))
            if no_tensor_cache:
                # The graph keeps its own input buffers instead of holding on to the caller's tensors.
                leaves = [leaf.clone() if isinstance(leaf, Tensor) else leaf for leaf in leaves]
                args, kwargs = tree_unflatten(leaves, spec)
            graph = StandInGraph(counters)
            with standin_capture(graph, dry_run=bool(dry_run)):
                outputs = original(*args, **kwargs)
            cache[key] = _InferenceGraph(graph, [t for t in leaves if isinstance(t, Tensor)], outputs)
            counters.graph_cache_inserts += 1
            return outputs
        counters.graph_cache_hits += 1
        cache.move_to_end(key)
        if not warmup_mode:
            given = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, Tensor)]
            _copy_into(cached.inputs, given)
            cached.graph.replay(asynchronous)
        return cached.outputs

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
    """Adapts a forward of any argument structure to the tensors-in, tuple-of-tensors-out form graphs need."""

    def __init__(self, model: Module, original: Callable[..., Any], spec: Any, constants: list[Any]) -> None:
        super().__init__()
        self.model = model
        self._original = original
        self._spec = spec
        self._constants = constants
        self.out_spec: Any = None
        self.out_constants: list[Any] = []

    def forward(self, *tensors: Tensor) -> tuple[Tensor, ...]:
        it = iter(tensors)
        leaves = [next(it) if c is _TENSOR else c for c in self._constants]
        args, kwargs = tree_unflatten(leaves, self._spec)
        out_leaves, self.out_spec = tree_flatten(self._original(*args, **kwargs))
        self.out_constants = [_TENSOR if isinstance(o, Tensor) else o for o in out_leaves]
        return tuple(o for o in out_leaves if isinstance(o, Tensor))

    def unflatten(self, out_tensors: tuple[Tensor, ...]) -> Any:
        it = iter(out_tensors)
        return tree_unflatten([next(it) if c is _TENSOR else c for c in self.out_constants], self.out_spec)


_TENSOR = object()


class StandInModuleCacher:
    """The stand-in for the bridge's ``ModuleCacher(max_graphs)``."""

    def __init__(self, max_graphs: int, counters: CacheCounters, lazy: bool) -> None:
        self.max_graphs = max_graphs
        self._counters = counters
        self._lazy = lazy
        self._graphs: OrderedDict[Any, tuple[_FlatForward, Callable[..., Any]]] = OrderedDict()
        self._profiled: Counter[Any] = Counter()
        self._priority: set[Any] = set()
        self._profiling = False
        self.iteration_count = -1
        self.calls = 0

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
        signature = inspect.signature(original)
        for name, parameter in signature.parameters.items():
            if parameter.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.VAR_POSITIONAL):
                raise ValueError(
                    f"ModuleCacher binds forward arguments by name, but {type(model).__name__}.forward takes"
                    f" {name!r} as {parameter.kind.description}: make it a regular parameter."
                )
        self._options = dict(
            allow_unused_input=allow_unused_input,
            asynchronous=asynchronous,
            dry_run=_env_flag(DRY_RUN_ENV, dry_run),
        )
        self._grad_accumulation = have_grad_accumulation

        def forward(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            if verbose and self.calls % log_frequency == 0:
                self.log_stats()
            bound = signature.bind(*args, **kwargs)
            call_args, call_kwargs = bound.args, bound.kwargs
            key = call_key(call_args, call_kwargs)
            if self._grad_accumulation and self.iteration_count == 0:
                key = (key, "first-micro-step")
            if use_lfu and self._profiling:
                self._profiled[key] += 1
            if model.training and torch.is_grad_enabled() and self._lazy and not (use_lfu and self._profiling):
                entry = self._graphs.get(key)
                if entry is not None:
                    self._counters.graph_cache_hits += 1
                    self._graphs.move_to_end(key)
                    return _call(entry, call_args, call_kwargs)
                if not use_lfu or key in self._priority:
                    if not use_lfu:
                        for flat, _ in _make_room(self._graphs, self.max_graphs, self._counters):
                            # The patched forward closes over ``flat``; dropping it breaks that cycle, so the graph's
                            # tensors are freed at once (or when a pending backward that still holds them has run).
                            del flat.forward
                    entry = self._insert(key, model, original, call_args, call_kwargs)
                    return _call(entry, call_args, call_kwargs)
            self._counters.graph_cache_uncached += 1
            return original(*args, **kwargs)

        def set_iteration_count(iteration: int) -> None:
            self.iteration_count = iteration

        model.orig_forward = original  # type: ignore[assignment]
        model.forward = forward
        model.set_iteration_count = set_iteration_count  # type: ignore[assignment]
        model.capture_start = self.capture_start  # type: ignore[assignment]
        model.capture_end = self.capture_end  # type: ignore[assignment]
        model.graph_cacher = self  # type: ignore[assignment]
        return model

    def _insert(
        self, key: Any, model: Module, original: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[_FlatForward, Callable[..., Any]]:
        leaves, spec = tree_flatten((args, kwargs))
        constants = [_TENSOR if isinstance(leaf, Tensor) else leaf for leaf in leaves]
        flat = _FlatForward(model, original, spec, constants)
        sample = tuple(leaf for leaf in leaves if isinstance(leaf, Tensor))
        graphed = standin_make_graphed_callables(flat, sample, counters=self._counters, **self._options)
        self._graphs[key] = (graphed, graphed.forward)
        self._counters.graph_cache_inserts += 1
        return self._graphs[key]

    def capture_start(self) -> None:
        """LFU: start counting input keys (calls run eagerly meanwhile)."""
        self._profiling = True
        self._profiled.clear()

    def capture_end(self) -> None:
        """LFU: keep the ``max_graphs`` most frequent keys counted since :meth:`capture_start`."""
        self._priority = {key for key, _ in self._profiled.most_common(self.max_graphs)}
        self._profiling = False

    @property
    def num_graphs(self) -> int:
        return len(self._graphs)

    def log_stats(self) -> None:
        log.info("HPU graph cache: %d graphs of at most %d, %d calls", len(self._graphs), self.max_graphs, self.calls)


def _call(entry: tuple[_FlatForward, Callable[..., Any]], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    flat, graphed_forward = entry
    tensors = tuple(leaf for leaf in tree_flatten((args, kwargs))[0] if isinstance(leaf, Tensor))
    return flat.unflatten(graphed_forward(*tensors))
