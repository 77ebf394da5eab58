"""The stand-in's ``make_graphed_callables``: a forward graph and a backward graph behind an autograd Function.

As on the bridge: the sample args become the static input buffers; the forward is captured on them, the backward
(``torch.autograd.grad`` of the outputs w.r.t. the inputs and parameters that require grad) is captured on static
grad-output buffers. The returned callable copies its inputs into the static inputs and replays the forward graph;
its backward copies the incoming gradients into the static grad outputs and replays the backward graph. Outputs and
gradients are the graphs' static tensors (detached), so a later call overwrites them: call a graphed callable once
per forward/backward pair.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor
from torch.nn import Module

from lightning_hpu.runtime.standin.graphs import GraphCounters, StandInGraph, standin_capture


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


def _as_tuple(outputs: Any) -> tuple[Tensor, ...]:
    return (outputs,) if isinstance(outputs, Tensor) else tuple(outputs)


def _graph_one(
    func: Callable[..., Any],
    args: tuple[Tensor, ...],
    warmups: int,
    allow_unused_input: bool,
    asynchronous: bool,
    dry_run: bool,
    counters: GraphCounters | None,
) -> Callable[..., Any]:
    params = tuple(func.parameters()) if isinstance(func, Module) else ()
    surface = args + params
    differentiable = tuple(t for t in surface if t.requires_grad)
    for _ in range(warmups):
        outs = _as_tuple(func(*args))
        if differentiable:
            torch.autograd.grad(
                [o for o in outs if o.requires_grad],
                differentiable,
                [torch.zeros_like(o) for o in outs if o.requires_grad],
                allow_unused=allow_unused_input,
            )
        del outs
    fwd, bwd = StandInGraph(counters), StandInGraph(counters)
    with standin_capture(fwd, dry_run=dry_run):
        raw = func(*args)
    was_tensor = isinstance(raw, Tensor)
    outputs = _as_tuple(raw)
    grad_outputs = tuple(torch.zeros_like(o) if o.requires_grad else None for o in outputs)
    with standin_capture(bwd, dry_run=dry_run):
        grads = (
            torch.autograd.grad(
                [o for o in outputs if o.requires_grad],
                differentiable,
                [g for g in grad_outputs if g is not None],
                allow_unused=allow_unused_input,
                materialize_grads=allow_unused_input,
            )
            if differentiable and any(g is not None for g in grad_outputs)
            else ()
        )
    grad_iter = iter(grads)
    grad_inputs = tuple(next(grad_iter, None) if t.requires_grad else None for t in surface)
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
    for func, args in zip(funcs, per_args, strict=True):
        graphed = _graph_one(func, tuple(args), warmups, allow_unused_input, asynchronous, dry_run, counters)
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
