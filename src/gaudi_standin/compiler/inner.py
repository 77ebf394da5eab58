"""How ``hpu_backend`` compiles one AOTAutograd graph (the bridge's ``compilers.hpu_compiler_inner``).

Each graph's nodes are placed by the bridge's eager-fallback rule and logged to its compile logs when they listen
(:mod:`gaudi_standin.compiler.graph_log`); the graph then runs as one recipe (:mod:`gaudi_standin.compiler.recipes`)
executed eagerly on the stand-in's device, and the emulated runtime counts graphs and recipes: one recipe per new
concrete input-shape signature, as Habana's graph compiler builds them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from gaudi_standin.emulator import dynamic_shapes, machine


def _recipe_key(code: str, signature: tuple[Any, ...]) -> str:
    """The recipe cache key of a compiled graph (its generated code) at concrete input shapes."""
    from gaudi_standin.emulator.recipe_store import RecipeStore

    return RecipeStore.key("compiled", code, signature)


def _standin_counters() -> Any:
    """The emulated runtime's counters (to count compiled graphs and recipes)."""
    return machine.current().counters


def _shape_signature(args: list[Any]) -> tuple[Any, ...]:
    """The concrete shapes (and integer sizes) a compiled graph is called with: what a device recipe is built for."""
    if dynamic_shapes.enabled():  # one recipe serves every size of the graph's tensors
        return tuple(len(arg.shape) for arg in args if isinstance(arg, torch.Tensor))
    return tuple(tuple(arg.shape) if isinstance(arg, torch.Tensor) else arg for arg in args if not callable(arg))


def _counting_recipes(run: Callable[..., Any], counters: Any, code: str) -> Callable[..., Any]:
    """``run`` (a boxed graph of source ``code``), counting one recipe per new concrete input-shape signature.

    Habana's graph compiler builds a recipe for static shapes (refined dynamic shapes are off by default), so a
    graph that TorchDynamo compiled once with symbolic sizes still costs the device a compilation for each new
    shape it meets. ``counters.compiled_recipes`` counts those, the first shape included, except recipes found in
    the on-disk recipe cache (``PT_HPU_RECIPE_CACHE_CONFIG``, :mod:`gaudi_standin.emulator.recipe_store`), which are
    loaded instead. With dynamic shapes on, one recipe serves every size
    (:mod:`~gaudi_standin.emulator.dynamic_shapes`).
    """
    from gaudi_standin.emulator.recipe_store import active_store

    seen: set[tuple[Any, ...]] = set()

    def run_counting(args: list[Any]) -> Any:
        signature = _shape_signature(args)
        if signature not in seen:
            seen.add(signature)
            store = active_store()
            key = _recipe_key(code, signature)
            if store is None or not store.load(key):
                counters.compiled_recipes += 1
                if store is not None:
                    store.store(key, code)
        return run(args)

    run_counting._boxed_call = True  # type: ignore[attr-defined]  # AOTAutograd's boxed calling convention
    return run_counting


def compile_inner(
    graph: torch.fx.GraphModule, example_inputs: list[Any], is_training: bool, is_backward: bool
) -> Callable[..., Any]:
    """Compile one AOTAutograd graph (the bridge's ``compilers.hpu_compiler_inner``): a boxed callable running it.

    The graph's nodes are placed (and logged, :func:`_place_nodes`), then it runs as one recipe
    (:mod:`gaudi_standin.compiler.recipes`), counting graphs and, for forward and inference graphs, recipes per
    input-shape signature; with ``use_compiled_recipes`` off it runs op by op and builds no recipe.
    """
    from gaudi_standin.compiler import recipes

    _place_nodes(graph)
    recipe = recipes.get_callable_recipe(None, graph, recipes.next_graph_name(), is_training=is_training)
    compiled = isinstance(recipe, recipes.HabanaGraphModule)

    def run(args: list[Any]) -> Any:
        if not compiled:
            return recipe(*args)
        outputs = recipe(*args)
        return list(outputs) if isinstance(outputs, tuple) else [outputs]

    run._boxed_call = True  # type: ignore[attr-defined]  # AOTAutograd's boxed calling convention
    counters = _standin_counters()
    if counters is None:
        return run
    counters.compiled_graphs += 1
    if is_backward:
        counters.compiled_backward_graphs += 1
        return run
    return _counting_recipes(run, counters, graph.code) if compiled else run


def _place_nodes(graph: torch.fx.GraphModule) -> None:
    """Ask the bridge's eager-fallback rule about each node, logging to the bridge's two compile logs if asked."""
    from gaudi_standin.compiler import config, graph_log

    graph_log.record(graph, graph_log.GRAPH_LOGGER, graph_log.FALLBACK_LOGGER, bool(config.use_eager_fallback))
