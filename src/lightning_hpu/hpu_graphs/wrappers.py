"""Graphing modules: ``make_graphed_callables``, ``ModuleCacher`` (training) and ``wrap_in_hpu_graph`` (inference).

Each checks its arguments, then hands them to the backend, which calls the bridge's function of the same name.
"""

from __future__ import annotations

from typing import Any

from torch import Tensor
from torch.nn import Module
from typing_extensions import Unpack

from lightning_hpu.hpu_graphs.rules import (
    check_graphable_for_training,
    check_not_compiled,
    graphs_backend,
    require_differentiable,
)
from lightning_hpu.runtime.graph_options import (
    GraphedCallablesOptions,
    InferenceGraphOptions,
    ModuleCacherOptions,
    check_option_names,
)


def _check_positive_int(value: Any, argument: str, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"`{argument}` must be a positive integer, got {value!r}.")


def make_graphed_callables(
    callables: Any, sample_args: tuple[Any, ...], **options: Unpack[GraphedCallablesOptions]
) -> Any:
    """Graph the forward and backward of a module or function (or a tuple of them, in the order they run).

    ``sample_args`` (a tuple of tensors, or a tuple of such tuples for several callables) become the static input
    buffers. A module gets its ``forward`` patched and is returned; a function is returned graphed. Outputs are the
    graph's static tensors: the next call overwrites them. As the bridge's ``autograd.grad`` path, it refuses a
    callable with no input or parameter that requires grad (checked here, before any work), no output that
    requires grad or an input that does not reach the outputs (unless ``allow_unused_input``), and, with
    ``warmups > 0``, any output that does not require grad. ``options`` are the bridge's
    (:class:`~lightning_hpu.GraphedCallablesOptions`): ``warmups=0``,
    ``allow_unused_input=False``, ``asynchronous=False``, ``disable_tensor_cache=False``, ``dry_run=False``.
    """
    check_option_names(options, GraphedCallablesOptions, "make_graphed_callables")
    backend = graphs_backend()
    several = isinstance(callables, tuple)
    funcs = callables if several else (callables,)
    per_args = sample_args if several else (sample_args,)
    if several and (not isinstance(sample_args, tuple) or len(sample_args) != len(funcs)):
        raise ValueError("With a tuple of callables, `sample_args` must be a tuple holding one tuple of tensors each.")
    for index, (func, args) in enumerate(zip(funcs, per_args, strict=True)):
        name = f"callables[{index}]" if several else "callables"
        if not callable(func):
            raise TypeError(f"`{name}` must be a module or a function, got {type(func).__name__}.")
        if isinstance(func, Module):
            check_graphable_for_training(func, name)
        if not isinstance(args, tuple) or not all(isinstance(a, Tensor) for a in args):
            raise TypeError(
                "`sample_args` must be a tuple of tensors for each callable (no other types, no keyword arguments):"
                " wrap a single tensor as `(x,)`."
            )
        require_differentiable(func, args, name)
    warmups = options.get("warmups", 0)
    if isinstance(warmups, bool) or not isinstance(warmups, int) or warmups < 0:
        raise ValueError(f"`warmups` must be a non-negative integer, got {warmups!r}.")
    return backend.make_graphed_callables(callables, sample_args, **options)


class ModuleCacher:
    """Caches a training graph (forward and backward) per input shape: ``ModuleCacher(max_graphs)(model)``.

    It graphs only while ``model.training and torch.is_grad_enabled()`` with ``PT_HPU_LAZY_MODE=1``; other calls run
    the original forward. The cache never evicts (the bridge's policy): while it holds fewer than ``max_graphs``
    graphs a new key is captured, and once it is full new keys run uncached (eagerly) while known keys keep
    replaying. The key is every argument (defaults filled in): tensor shapes and view layout, other values as they
    are, and the autocast state; not the dtype, so the same shapes in another dtype replay the first graph with the
    inputs cast. With ``use_lfu=True`` only the most frequent keys counted between ``model.capture_start()`` and
    ``model.capture_end()`` are graphed. The model is patched in place and returned.
    """

    def __init__(self, max_graphs: int = 10) -> None:
        _check_positive_int(max_graphs, "max_graphs")
        self.max_graphs = max_graphs

    def __call__(self, model: Module, **options: Unpack[ModuleCacherOptions]) -> Module:
        """Patch ``model`` (or, with ``inplace=False``, a copy) and return it.

        ``options`` are the bridge's (:class:`~lightning_hpu.ModuleCacherOptions`):
        ``use_lfu=False``, ``inplace=True``, ``allow_unused_input=False``, ``asynchronous=False``,
        ``have_grad_accumulation=False``, ``log_frequency=100``, ``verbose=False``, ``disable_tensor_cache=False``,
        ``dry_run=False``.
        """
        if not isinstance(model, Module):
            raise TypeError(f"`model` must be a torch.nn.Module, got {type(model).__name__}.")
        check_option_names(options, ModuleCacherOptions, "ModuleCacher()")
        _check_positive_int(options.get("log_frequency", 100), "log_frequency")
        check_graphable_for_training(model, "model")
        cacher = graphs_backend().module_cacher(self.max_graphs)
        return cacher(model, **options)


def wrap_in_hpu_graph(
    module: Module, *, dry_run: bool | None = None, **options: Unpack[InferenceGraphOptions]
) -> Module:
    """Capture ``module.forward`` once per input shape and replay it afterwards (inference).

    The first call with new input shapes captures and returns its outputs; later calls copy their inputs into that
    call's input tensors and replay, returning the same output tensors (clone what you keep). With ``max_graphs``
    set, a full cache never evicts: new shapes run uncached (eagerly), known shapes keep replaying. The key has no
    dtype: the same shapes in another dtype replay the first graph, inputs cast into its buffers. Forward keyword
    ``bypass_hpu_graphs=True`` runs eagerly; ``module.clear_cache()`` drops the graphs. ``dry_run=None``: a dry
    run when the tensor cache is disabled. ``options`` are the bridge's
    (:class:`~lightning_hpu.InferenceGraphOptions`): ``asynchronous=False``,
    ``disable_tensor_cache=False``, ``max_graphs=None``.
    """
    if not isinstance(module, Module):
        raise TypeError(f"`module` must be a torch.nn.Module, got {type(module).__name__}.")
    check_option_names(options, InferenceGraphOptions, "wrap_in_hpu_graph")
    _check_positive_int(options.get("max_graphs"), "max_graphs", allow_none=True)
    check_not_compiled(module, "module")
    return graphs_backend().wrap_in_hpu_graph(module, dry_run=dry_run, **options)


__all__ = ["ModuleCacher", "make_graphed_callables", "wrap_in_hpu_graph"]
