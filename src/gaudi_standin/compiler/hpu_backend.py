"""``torch.compile(model, backend="hpu_backend")`` on the CPU stand-in.

On a Gaudi the bridge registers ``hpu_backend``: TorchDynamo captures graphs, AOTAutograd splits them into forward and
backward, and Habana's graph compiler builds a recipe for each. Here the same name runs TorchDynamo and AOTAutograd
for real (so graph breaks, guards and recompilations happen exactly as on the device) and then executes the
AOTAutograd graphs eagerly on the CPU, like torch's ``aot_eager`` backend. That keeps tests fast: no code generation
and no C++ compiler, while every step above the device compiler is the real one. Options take the bridge's keys
(``hpu_backend_config``), patched for one compilation; an unknown key is refused, as the bridge's config patch
refuses it.

:func:`register_with` registers it as TorchDynamo's registry loads (the stand-in's import hook), so
``torch.compile(backend="hpu_backend")`` works whether or not anything imported the bridge, as on a Gaudi, where
loading the bridge registers it; :func:`register_hpu_backend` registers it at once (idempotent). Its settings are the
emulated bridge's (``habana_frameworks.torch.dynamo.compile_backend.config``), read when something compiles.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

import torch

from gaudi_standin.emulator import dynamic_shapes, machine
from gaudi_standin.emulator.environment import LAZY_MODE_ENV, lazy_mode_env_value

#: The name the bridge registers with TorchDynamo.
BACKEND_NAME = "hpu_backend"


class CompileInLazyModeError(RuntimeError):
    """``torch.compile(backend="hpu_backend")`` was called while the process runs the legacy lazy mode."""


_lock = threading.Lock()


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


def _counting_compiler(kind: str) -> Callable[[torch.fx.GraphModule, list[Any]], Callable[..., Any]]:
    """An AOTAutograd compiler that runs the graph eagerly, counting graphs and (forward) recipes per shape."""
    from torch._functorch.aot_autograd import make_boxed_func

    def compile_graph(graph: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        counters = _standin_counters()
        run = make_boxed_func(graph.forward)
        if counters is None:
            return run
        counters.compiled_graphs += 1
        if kind == "backward":
            counters.compiled_backward_graphs += 1
            return run
        return _counting_recipes(run, counters, graph.code)

    return compile_graph


def hpu_backend(graph: torch.fx.GraphModule, example_inputs: list[Any], **kwargs: Any) -> Callable[..., Any]:
    """The stand-in's ``hpu_backend``: real TorchDynamo + AOTAutograd, graphs executed eagerly on the CPU."""
    if machine.current().is_lazy():
        raise CompileInLazyModeError(
            f"torch.compile(backend='{BACKEND_NAME}') needs eager mode, but this process runs the legacy lazy mode"
            f" ({LAZY_MODE_ENV}={lazy_mode_env_value()!r}); set {LAZY_MODE_ENV}=0 (or unset it) before starting Python."
        )
    # The backend's settings are the emulated habana_frameworks.torch.dynamo.compile_backend.config, which ``options=``
    # patches for this compilation as the bridge's backend does (an unknown key is refused there). Imported here, when
    # something compiles: importing it imports the emulated bridge, which TorchDynamo's registry must not wait for.
    from torch._dynamo.backends.common import aot_autograd

    from gaudi_standin.bridge.habana_frameworks.torch.dynamo.compile_backend import config

    backend_config: Any = config  # a torch config module: ``install_config_module`` gave it ``patch``
    with backend_config.patch(dict(kwargs.get("options") or {})):
        return aot_autograd(
            fw_compiler=_counting_compiler("forward"),
            bw_compiler=_counting_compiler("backward"),
            keep_inference_input_mutations=bool(backend_config.keep_input_mutations),
        )(graph, example_inputs)


def register_with(registry: ModuleType) -> None:
    """Register ``hpu_backend`` in TorchDynamo's registry as it finishes loading (called by the import hook)."""
    if BACKEND_NAME not in registry._COMPILER_FNS:
        registry.register_backend(compiler_fn=hpu_backend, name=BACKEND_NAME)


def register_hpu_backend() -> None:
    """Register the stand-in's ``hpu_backend`` with TorchDynamo, unless a backend of that name exists (idempotent)."""
    from torch._dynamo.backends import registry

    with _lock:
        # Only the registered names are looked at: listing entry points would import every torch backend.
        if BACKEND_NAME in registry._COMPILER_FNS:
            return
        from torch._dynamo.backends.registry import register_backend

        register_backend(compiler_fn=hpu_backend, name=BACKEND_NAME)
