"""Where HPU graphs cannot work, said before any work starts."""

from __future__ import annotations

import sys

from torch import Tensor
from torch.nn import Module
from torch.nn.parallel import DataParallel, DistributedDataParallel

from lightning_hpu.runtime import HPUBackend, require_backend, settings


class HPUGraphsUnavailableError(RuntimeError):
    """HPU graphs were asked for where the device cannot run them."""


def graphs_backend() -> HPUBackend:
    """The backend, provided it is in lazy mode: the bridge has HPU graphs only there."""
    backend = require_backend()
    if not backend.is_lazy():
        raise HPUGraphsUnavailableError(
            "HPU graphs need the legacy lazy mode, but this process runs in eager mode (the default of current Gaudi"
            f" software), where the bridge has no graphs. Set {settings.LAZY_MODE_ENV}=1 before starting Python, or"
            " drop HPU graphs and use torch.compile(backend='hpu_backend') in eager mode."
        )
    return backend


def is_compiled(module: Module) -> bool:
    """Whether ``module`` is a ``torch.compile`` result or was compiled in place (``module.compile()``)."""
    eval_frame = sys.modules.get("torch._dynamo.eval_frame")  # nothing is compiled until dynamo was imported
    if eval_frame is not None and isinstance(module, eval_frame.OptimizedModule):
        return True
    return getattr(module, "_compiled_call_impl", None) is not None


def check_not_compiled(module: Module, argument: str) -> None:
    for name, sub in module.named_modules():
        if is_compiled(sub):
            where = f"its submodule {name!r}" if name else "it"
            raise HPUGraphsUnavailableError(
                f"`{argument}` cannot be graphed: {where} is torch.compile'd, and HPU graphs do not support"
                " torch.compile. Use one or the other: graphs in lazy mode, or torch.compile in eager mode."
            )


#: Instance attributes that ``wrap_in_hpu_graph`` or ``ModuleCacher`` add to the module they graph.
_GRAPHED_MARKS = ("clear_cache", "orig_forward", "graph_cacher", "set_iteration_count")


def check_not_graphed(module: Module, argument: str) -> None:
    """Refuse a module whose forward is already graphed: graphing it again would capture the graphs themselves."""
    if any(mark in module.__dict__ for mark in _GRAPHED_MARKS):
        raise HPUGraphsUnavailableError(
            f"`{argument}` ({type(module).__name__}) is already graphed (by wrap_in_hpu_graph or ModuleCacher):"
            " pass the module ungraphed to HPUGraphs, or drop the HPUGraphs callback and keep your own graphing."
        )


def check_graphable_for_training(module: Module, argument: str) -> None:
    """The bridge's rules for training graphs: no hooks, no buffers that require grad, not wrapped in DDP."""
    check_not_compiled(module, argument)
    if isinstance(module, (DataParallel, DistributedDataParallel)):
        raise HPUGraphsUnavailableError(
            f"`{argument}` is wrapped in {type(module).__name__}: graph the module first, then wrap it."
        )
    hooks = module._backward_hooks or module._forward_hooks or module._forward_pre_hooks
    if hooks:
        raise HPUGraphsUnavailableError(
            f"`{argument}` ({type(module).__name__}) has hooks registered; the bridge graphs only modules without"
            " hooks at the time they are passed. Remove the hooks, or register them after graphing."
        )
    for name, buffer in module.named_buffers():
        if buffer.requires_grad:
            raise HPUGraphsUnavailableError(
                f"`{argument}` has a buffer {name!r} that requires grad; in a graphed module only parameters may be"
                " trainable. Make it a Parameter, or call `.requires_grad_(False)` on it."
            )


def require_differentiable(func: object, args: tuple[Tensor, ...], name: str) -> None:
    """Refuse a callable to graph with a backward whose sample args and parameters include none that requires grad."""
    params = tuple(func.parameters()) if isinstance(func, Module) else ()
    if not any(tensor.requires_grad for tensor in args + params):
        raise ValueError(
            f"make_graphed_callables graphs a backward, but no sample arg or parameter of `{name}` requires grad, so"
            " there is nothing to differentiate (the bridge's autograd.grad refuses this): graph inference with"
            " wrap_in_hpu_graph, or pass inputs or parameters that require grad."
        )
