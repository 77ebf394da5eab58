"""The stand-in's HPU graph: capture records the aten ops that run, replay runs exactly those ops again.

A capture pushes a ``TorchDispatchMode`` that sees every aten op below autograd, on the capturing thread and in
the backward pass that autograd runs for it. Each op is run (so the capture computes, as on a Gaudi) and recorded
with the very tensors it read and wrote. Replay re-runs the recorded ops, without Python, on those same tensors:

- tensors that existed before the capture (static inputs, parameters, optimizer state, ``.grad``) are read and
  updated in place, so a captured optimizer step updates the real parameters;
- tensors that an op allocated during the capture stay alive as the graph's memory; at replay the op runs again
  and its result is copied into the captured tensor, so every later op (and the user holding the output) sees the
  new values in the same storage;
- view ops are not re-run: the captured view still aliases its base, whose storage replay refreshes.

What a graph cannot hold, the stand-in refuses during the capture: reading a tensor value on the host (``.item()``,
``bool(t)``, printing, ``.tolist()``, ``.numpy()``, ``.cpu()``) and ops whose output shape depends on tensor values
(``nonzero``, boolean-mask indexing, ``unique``, ...). Here the stand-in is stricter than a Gaudi, on purpose: there
such a host sync raises nothing; a step marker splits the capture and the value read during the capture is frozen
into the graph, so every replay silently reuses it. Raising catches that bug on a laptop.

:func:`capture_active` tells other parts of the stand-in (the ``hccl`` group refuses collectives in a capture)
whether a capture is underway.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from gaudi_standin.graphs.dry_run import StateKeeper

aten = torch.ops.aten


class HostSyncInCaptureError(RuntimeError):
    """A graph capture met an op that needs tensor values on the host.

    A Gaudi would not raise: it would freeze the value seen during the capture into the graph. The stand-in raises
    because a frozen value is almost always a bug.
    """


class GraphCounters(Protocol):
    """The counters a graph reports to (the stand-in backend's :class:`StandInCounters`)."""

    graph_captures: int
    graph_replays: int


_HINT = (
    " A graph runs without Python, so a value read on the host during the capture would be frozen into the graph"
    " (a Gaudi does that silently; the CPU stand-in refuses it). Move this out of the captured region, or split"
    " the module into graphed static parts and an eager dynamic part (docs/guide/hpu-graphs.md, 'Dynamic models')."
)

#: Tensor methods that copy data to the host, seen through a ``TorchFunctionMode`` (they may not dispatch).
_HOST_METHODS: dict[Any, str] = {
    torch.Tensor.item: "Tensor.item()",
    torch.Tensor.tolist: "Tensor.tolist()",
    torch.Tensor.numpy: "Tensor.numpy()",
    torch.Tensor.cpu: "Tensor.cpu()",
    torch.Tensor.__bool__: "bool(tensor) (e.g. `if tensor:`)",
    torch.Tensor.__int__: "int(tensor)",
    torch.Tensor.__float__: "float(tensor)",
    torch.Tensor.__index__: "using a tensor as a Python index",
    torch.Tensor.__repr__: "printing a tensor",
    torch.Tensor.__format__: "formatting a tensor",
}

#: Ops whose output shape depends on tensor values, or that hand a value to the host.
_DATA_DEPENDENT_OPS: dict[Any, str] = {
    aten._local_scalar_dense: "reading a tensor value on the host (.item(), bool(), int(), float())",
    aten.nonzero: "torch.nonzero / torch.where(cond) (output shape depends on values)",
    aten.argwhere: "torch.argwhere (output shape depends on values)",
    aten.masked_select: "torch.masked_select (output shape depends on values)",
    aten._unique: "torch.unique (output shape depends on values)",
    aten._unique2: "torch.unique (output shape depends on values)",
    aten.unique_dim: "torch.unique (output shape depends on values)",
    aten.unique_consecutive: "torch.unique_consecutive (output shape depends on values)",
    aten.unique_dim_consecutive: "torch.unique_consecutive (output shape depends on values)",
    aten.bincount: "torch.bincount (output shape depends on values)",
    aten.equal: "torch.equal (returns a Python bool)",
    aten.allclose: "torch.allclose (returns a Python bool)",
    aten.is_nonzero: "reading a tensor value on the host (bool(tensor))",
}

_MASK_INDEX_OPS = frozenset({aten.index, aten.index_put, aten.index_put_, aten._index_put_impl_})

#: Ops that return Python values from metadata only, reading no device value (no host sync): sizes, and the dtype
#: arithmetic that autocast and type promotion do on the host (Llama's rotary embedding under autocast calls
#: ``promote_types`` inside a captured forward; a Gaudi accepts it).
_METADATA_OPS = frozenset(
    {
        aten.sym_size,
        aten.sym_stride,
        aten.sym_numel,
        aten.sym_storage_offset,
        aten.is_same_size,
        aten.dim,
        aten.promote_types,
        aten.result_type,
        aten.can_cast,
    }
)


def _host_sync_reason(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    packet = func.overloadpacket
    reason = _DATA_DEPENDENT_OPS.get(packet)
    if reason is not None:
        return reason
    if packet is aten.repeat_interleave and func._overloadname == "Tensor" and kwargs.get("output_size") is None:
        return "torch.repeat_interleave with tensor repeats and no output_size (output shape depends on values)"
    if packet in _MASK_INDEX_OPS and len(args) > 1:
        for index in args[1] or ():
            if isinstance(index, torch.Tensor) and index.dtype in (torch.bool, torch.uint8):
                return "boolean-mask indexing (output shape depends on values; use torch.where(mask, a, b))"
    return None


def _fail(what: str) -> HostSyncInCaptureError:
    return HostSyncInCaptureError(f"HPU graph capture cannot contain {what}." + _HINT)


#: In-place ops that change only a tensor's shape: the captured tensor already has the shape they gave it, so a
#: replay does not run them again (``matmul`` of a vector squeezes its ``mm`` result in place, for one).
_METADATA_INPLACE_OPS = frozenset(
    {aten.squeeze_, aten.unsqueeze_, aten.transpose_, aten.t_, aten.swapdims_, aten.swapaxes_, aten.as_strided_}
)


class _Step:
    """One recorded op: what to call, on which tensors, and which captured tensors receive its fresh results (in
    the shape the op gave them, which a later in-place shape change of the captured tensor does not alter)."""

    __slots__ = ("args", "fresh_returns", "func", "geometries", "kwargs", "n_returns", "targets")

    def __init__(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], fresh: list[int], out: Any) -> None:
        self.func = func
        self.args = args
        self.kwargs = kwargs
        self.fresh_returns = fresh
        self.n_returns = len(func._schema.returns)
        self.targets = _fresh_tensors(out, fresh, self.n_returns)
        self.geometries = [(t.size(), t.stride(), t.storage_offset()) for t in self.targets]

    def run(self) -> None:
        result = self.func(*self.args, **self.kwargs)
        if self.targets:
            fresh = _fresh_tensors(result, self.fresh_returns, self.n_returns)
            for target, geometry, value in zip(self.targets, self.geometries, fresh, strict=True):
                if (target.size(), target.stride(), target.storage_offset()) != geometry:
                    target = target.as_strided(*geometry)
                target.copy_(value)


def _fresh_tensors(out: Any, fresh: list[int], n_returns: int) -> list[torch.Tensor]:
    if not fresh:
        return []
    returns = out if isinstance(out, tuple) and n_returns > 1 else (out,)
    return [leaf for i in fresh for leaf in tree_leaves(returns[i]) if isinstance(leaf, torch.Tensor)]


def _plan(func: Any) -> tuple[bool, list[int]]:
    """Whether ``func`` must run at replay, and which of its returns are freshly allocated tensors."""
    schema = func._schema
    mutates = any(arg.alias_info is not None and arg.alias_info.is_write for arg in schema.arguments)
    fresh = [i for i, ret in enumerate(schema.returns) if ret.alias_info is None]
    return mutates or bool(fresh), fresh


class _Recorder(TorchDispatchMode):
    """Records every aten op of a capture (forward, autograd's backward, in-place updates) into ``steps``."""

    def __init__(self, keeper: StateKeeper | None = None) -> None:
        super().__init__()
        self.steps: list[_Step] = []
        self.failed = False
        self.keeper = keeper  # a dry run's: undoes the capture's writes to existing tensors at its end

    def __torch_dispatch__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = kwargs or {}
        if self.failed or func.namespace == "profiler":
            return func(*args, **kwargs)
        reason = _host_sync_reason(func, args, kwargs)
        if reason is not None:
            self.failed = True
            raise _fail(reason)
        if self.keeper is not None:
            self.keeper.before(func, args, kwargs)
        out = func(*args, **kwargs)
        if func.overloadpacket not in _METADATA_OPS and any(
            isinstance(leaf, (bool, int, float, complex)) for leaf in tree_leaves(out)
        ):
            self.failed = True
            raise _fail(f"{func} (it returns a Python value, a host sync)")
        needed, fresh = _plan(func)
        if self.keeper is not None:
            self.keeper.allocated(_fresh_tensors(out, fresh, len(func._schema.returns)))
        if needed and func.overloadpacket not in _METADATA_INPLACE_OPS:
            self.steps.append(_Step(func, args, kwargs, fresh, out))
        return out


class _HostGuard(TorchFunctionMode):
    """Refuses the tensor methods that copy data to the host during a capture."""

    def __init__(self, recorder: _Recorder) -> None:
        super().__init__()
        self._recorder = recorder

    def __torch_function__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        what = _HOST_METHODS.get(func)
        if what is not None and not self._recorder.failed:
            self._recorder.failed = True
            raise _fail(what)
        return func(*args, **(kwargs or {}))


_active_capture: StandInGraph | None = None


def capture_active() -> bool:
    """Whether an HPU graph capture is underway in this process (only one can be, as on the bridge)."""
    return _active_capture is not None


class StandInGraph:
    """The stand-in for ``habana_frameworks.torch.hpu.HPUGraph`` (same methods, same rules)."""

    def __init__(self, counters: GraphCounters | None = None) -> None:
        self._counters = counters
        self._steps: list[_Step] = []
        self._recorder: _Recorder | None = None
        self._guard: _HostGuard | None = None
        self._captured = False
        self._inference_mode = False
        self._rng_state: torch.Tensor | None = None

    @property
    def num_ops(self) -> int:
        """How many ops a replay runs."""
        return len(self._steps)

    @property
    def is_capturing(self) -> bool:
        return self._recorder is not None

    def capture_begin(self, dry_run: bool = False) -> None:
        """Start recording. The stand-in computes during every capture; with ``dry_run`` (the bridge's: record
        without executing) the capture's writes to tensors that existed before it are undone at its end."""
        global _active_capture
        if _active_capture is not None:
            raise RuntimeError("Only one HPU graph capture may be underway at a time: end the current one first.")
        self.reset()
        self._recorder = _Recorder(StateKeeper() if dry_run else None)
        self._guard = _HostGuard(self._recorder)
        self._inference_mode = torch.is_inference_mode_enabled()
        self._rng_state = torch.get_rng_state()  # the device's generator is the host's (see _stop)
        self._guard.__enter__()
        self._recorder.__enter__()
        _active_capture = self

    def capture_end(self) -> None:
        """Stop recording; the graph can be replayed unless the capture failed."""
        recorder = self._stop()
        if recorder.failed:
            raise RuntimeError("This HPU graph capture failed (see the error raised inside it); capture again.")
        self._steps = recorder.steps
        self._captured = True
        if self._counters is not None:
            self._counters.graph_captures += 1

    def abort(self) -> None:
        """Stop a capture without keeping it (after an error inside the captured region)."""
        if self._recorder is not None:
            self._stop()
        self.reset()

    def _stop(self) -> _Recorder:
        global _active_capture
        recorder, guard = self._recorder, self._guard
        if recorder is None or guard is None:
            raise RuntimeError("capture_end() was called without capture_begin().")
        recorder.__exit__(None, None, None)
        guard.__exit__(None, None, None)
        self._recorder = self._guard = None
        _active_capture = None
        if recorder.keeper is not None:
            recorder.keeper.restore()
        if self._rng_state is not None:
            # As on the bridge, whose graph holds the generator: capturing draws no random numbers, and each replay
            # draws what one eager run would, so a graphed module's random ops match eager ones run for run.
            torch.set_rng_state(self._rng_state)
            self._rng_state = None
        return recorder

    def replay(self, asynchronous: bool = False) -> None:
        """Run the captured ops again on the captured tensors (``asynchronous`` is moot on the CPU)."""
        if not self._captured:
            raise RuntimeError("replay() needs a captured graph: capture it first (HPUGraph.capture_begin/end).")
        if _active_capture is not None:
            raise RuntimeError("An HPU graph cannot be replayed while a capture is underway.")
        # The ops were recorded below autograd (and after autocast): replay them there too.
        with (
            torch.inference_mode(self._inference_mode),
            torch.autocast("cpu", enabled=False),
            torch._C._AutoDispatchBelowADInplaceOrView(),
        ):
            for step in self._steps:
                step.run()
        if self._counters is not None:
            self._counters.graph_replays += 1

    def reset(self) -> None:
        """Forget the captured ops and free the graph's memory."""
        if self._recorder is not None:
            raise RuntimeError("reset() during a capture: end or abort the capture first.")
        self._steps = []
        self._captured = False

    def clear_inputs(self) -> None:
        """The bridge frees inputs held for in-place ops; the stand-in holds nothing extra."""


@contextmanager
def standin_capture(hpu_graph: StandInGraph, dry_run: bool = False, collect: bool = False) -> Iterator[None]:
    """Capture into ``hpu_graph``; an error inside aborts the capture. ``collect`` runs ``gc`` first, as the
    bridge's ``graph`` context manager does to free memory for the graph."""
    if collect:
        gc.collect()
    hpu_graph.capture_begin(dry_run=dry_run)
    try:
        yield
    except BaseException:
        hpu_graph.abort()
        raise
    hpu_graph.capture_end()
