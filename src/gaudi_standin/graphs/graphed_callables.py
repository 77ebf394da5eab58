"""The stand-in's ``make_graphed_callables``: a forward graph and a backward graph behind an autograd Function.

As on the bridge: the sample args become the static input buffers; the forward is captured on them, the backward
(``torch.autograd.grad`` of the outputs w.r.t. the inputs and parameters that require grad) is captured on static
grad-output buffers. The returned callable copies its inputs into the static inputs and replays the forward graph;
its backward copies the incoming gradients into the static grad outputs and replays the backward graph. Outputs and
gradients are the graphs' static tensors (detached), so a later call overwrites them: call a graphed callable once
per forward/backward pair.

It refuses what the bridge's ``autograd.grad`` calls refuse, each with a sentence: a callable with no input or
parameter that requires grad; no output that requires grad (unless ``allow_unused_input``); an input that requires
grad but does not reach the outputs (unless ``allow_unused_input``); with ``warmups > 0``, any output that does not
require grad (the warmup differentiates every output); outputs other than a tensor or a tuple of tensors.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor
from torch.nn import Module

from gaudi_standin.graphs.standin_graph import GraphCounters, StandInGraph, standin_capture


class _GraphedParts:
    """The graphs and static tensors of one graphed callable."""

    def __init__(
        self,
        fwd: StandInGraph,
        bwd: StandInGraph,
        n_user_args: int,
        input_surface: tuple[Tensor, ...],
        outputs: tuple[Tensor, ...],
        grad_outputs: tuple[Tensor | None, ...],
        grad_inputs: tuple[Tensor | None, ...],
        asynchronous: bool,
    ) -> None:
        self.fwd = fwd
        self.bwd = bwd
        self.n_user_args = n_user_args
        self.input_surface = input_surface
        self.outputs = outputs
        self.grad_outputs = grad_outputs
        self.grad_inputs = grad_inputs
        self.asynchronous = asynchronous


class _Graphed(torch.autograd.Function):
    """Forward replays the forward graph; backward replays the backward graph."""

    @staticmethod
    def forward(ctx: Any, parts: _GraphedParts, *inputs: Tensor) -> tuple[Tensor, ...]:
        ctx.parts = parts
        for static, given in zip(parts.input_surface[: parts.n_user_args], inputs[: parts.n_user_args], strict=True):
            if static is not given:
                static.copy_(given)
        parts.fwd.replay(parts.asynchronous)
        return tuple(out.detach() for out in parts.outputs)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any, *grads: Tensor) -> tuple[Tensor | None, ...]:
        parts: _GraphedParts = ctx.parts
        for static, grad in zip(parts.grad_outputs, grads, strict=True):
            if static is not None:
                static.copy_(grad)
        parts.bwd.replay(parts.asynchronous)
        return (None, *(g.detach() if g is not None else None for g in parts.grad_inputs))


def _as_tuple(outputs: Any, name: str) -> tuple[Tensor, ...]:
    outs = (outputs,) if isinstance(outputs, Tensor) else outputs
    if not isinstance(outs, tuple) or not all(isinstance(o, Tensor) for o in outs):
        raise TypeError(
            f"A graphed callable must return a tensor or a tuple of tensors, but `{name}` returned"
            f" {type(outputs).__name__}: return the tensors as a tuple (or graph it with ModuleCacher, which packs"
            " any structure)."
        )
    return outs


def require_differentiable(func: Callable[..., Any], args: tuple[Tensor, ...], name: str) -> tuple[Tensor, ...]:
    """The sample args and parameters of ``func`` that require grad; refuses a callable with none."""
    params = tuple(func.parameters()) if isinstance(func, Module) else ()
    differentiable = tuple(t for t in args + params if t.requires_grad)
    if not differentiable:
        raise ValueError(
            f"make_graphed_callables graphs a backward, but no sample arg or parameter of `{name}` requires grad, so"
            " there is nothing to differentiate (the bridge's autograd.grad refuses this): graph inference with"
            " wrap_in_hpu_graph, or pass inputs or parameters that require grad."
        )
    return differentiable


def _grad(
    outputs: tuple[Tensor, ...],
    inputs: tuple[Tensor, ...],
    grad_outputs: tuple[Tensor, ...],
    allow_unused_input: bool,
    name: str,
) -> tuple[Tensor | None, ...]:
    """The bridge's ``autograd.grad`` call, with its failures said in one sentence."""
    try:
        return torch.autograd.grad(
            outputs, inputs, grad_outputs, allow_unused=allow_unused_input, materialize_grads=allow_unused_input
        )
    except RuntimeError as error:
        if "not have been used" not in str(error):
            raise
        raise RuntimeError(
            f"An input or parameter of `{name}` that requires grad does not affect its outputs, and the graphed"
            " backward differentiates every one of them: pass allow_unused_input=True (its gradient is then zeros),"
            " or make it stop requiring grad."
        ) from None


def _graph_one(
    func: Callable[..., Any],
    args: tuple[Tensor, ...],
    name: str,
    warmups: int,
    allow_unused_input: bool,
    asynchronous: bool,
    dry_run: bool,
    counters: GraphCounters | None,
) -> Callable[..., Any]:
    params = tuple(func.parameters()) if isinstance(func, Module) else ()
    surface = args + params
    differentiable = require_differentiable(func, args, name)
    for _ in range(warmups):
        outs = _as_tuple(func(*args), name)
        for index, out in enumerate(outs):
            if not out.requires_grad:
                raise RuntimeError(
                    f"With warmups={warmups}, every output of `{name}` is differentiated (as on the bridge), but"
                    f" output {index} does not require grad: return only outputs that require grad, or use warmups=0."
                )
        _grad(outs, differentiable, tuple(torch.zeros_like(o) for o in outs), allow_unused_input, name)
        del outs
    fwd, bwd = StandInGraph(counters), StandInGraph(counters)
    with standin_capture(fwd, dry_run=dry_run):
        raw = func(*args)
    was_tensor = isinstance(raw, Tensor)
    outputs = _as_tuple(raw, name)
    needing = tuple(o for o in outputs if o.requires_grad)
    if not needing and not allow_unused_input:
        raise RuntimeError(
            f"No output of `{name}` requires grad, so its graphed backward has nothing to differentiate (the"
            " bridge's autograd.grad refuses this): graph inference with wrap_in_hpu_graph, or pass"
            " allow_unused_input=True to get zero gradients."
        )
    grad_outputs = tuple(torch.zeros_like(o) if o.requires_grad else None for o in outputs)
    with standin_capture(bwd, dry_run=dry_run):
        grads = _grad(
            needing, differentiable, tuple(g for g in grad_outputs if g is not None), allow_unused_input, name
        )
    grad_iter = iter(grads)
    grad_inputs = tuple(next(grad_iter) if t.requires_grad else None for t in surface)
    parts = _GraphedParts(fwd, bwd, len(args), surface, outputs, grad_outputs, grad_inputs, asynchronous)

    def graphed(*user_args: Tensor) -> Any:
        out = _Graphed.apply(parts, *user_args, *params)
        return out[0] if was_tensor else out

    return graphed


def standin_make_graphed_callables(
    callables: Any,
    sample_args: tuple[Any, ...],
    warmups: int = 0,
    allow_unused_input: bool = False,
    asynchronous: bool = False,
    disable_tensor_cache: bool = False,
    dry_run: bool = False,
    counters: GraphCounters | None = None,
) -> Any:
    """Graph a callable (or a tuple of them); modules get their ``forward`` patched, like the bridge does."""
    single = not isinstance(callables, tuple)
    funcs: Sequence[Any] = (callables,) if single else callables
    per_args: Sequence[tuple[Tensor, ...]] = (sample_args,) if single else sample_args
    results: list[Any] = []
    for index, (func, args) in enumerate(zip(funcs, per_args, strict=True)):
        name = "callables" if single else f"callables[{index}]"
        # As the bridge's: without the tensor cache the captures are dry runs.
        dry = dry_run or disable_tensor_cache
        graphed = _graph_one(func, tuple(args), name, warmups, allow_unused_input, asynchronous, dry, counters)
        if isinstance(func, Module):
            func.forward = _train_state_forward(func, func.training, graphed, func.forward)
            results.append(func)
        else:
            results.append(graphed)
    return results[0] if single else tuple(results)


def _train_state_forward(
    module: Module, training: bool, graphed: Callable[..., Any], original: Callable[..., Any]
) -> Callable[..., Any]:
    """The graph serves calls in the training state it was captured in; the other state runs eagerly."""

    def forward(*user_args: Any) -> Any:
        return graphed(*user_args) if module.training == training else original(*user_args)

    return forward
