"""The bridge's HPU-graph API on the stand-in: ``HPUGraph``, ``graph``, ``make_graphed_callables``, ``ModuleCacher``
and ``wrap_in_hpu_graph`` with the bridge's signatures, capturing and replaying for real
(:mod:`gaudi_standin.graphs.standin_graph`).

They report to the emulated Gaudi's counters (captures, replays, cache hits). The emulated
``habana_frameworks.torch.hpu`` serves them in lazy mode only, as the bridge does.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from torch.nn import Module

from gaudi_standin.emulator import machine
from gaudi_standin.graphs.graphed_callables import standin_make_graphed_callables
from gaudi_standin.graphs.helpers import CachedParams, TensorPacker, copy_to
from gaudi_standin.graphs.module_caches import StandInModuleCacher, standin_wrap_in_hpu_graph
from gaudi_standin.graphs.standin_graph import StandInGraph, standin_capture

__all__ = [
    "CachedParams",
    "HPUGraph",
    "ModuleCacher",
    "TensorPacker",
    "copy_to",
    "graph",
    "make_graphed_callables",
    "wrap_in_hpu_graph",
]


class HPUGraph(StandInGraph):
    """One captured graph: ``capture_begin``/``capture_end``, then ``replay`` (the bridge's ``HPUGraph()``)."""

    def __init__(self) -> None:
        super().__init__(machine.current().counters)


@contextmanager
def graph(hpu_graph: HPUGraph, stream: Any = None, dry_run: bool = False) -> Iterator[None]:
    """Capture the ``with`` block into ``hpu_graph`` (after a ``gc.collect()``, as the bridge does)."""
    if not isinstance(hpu_graph, StandInGraph):
        raise TypeError(f"graph() captures into an HPUGraph, not into a {type(hpu_graph).__name__}.")
    with standin_capture(hpu_graph, dry_run=dry_run, collect=True):
        yield


def make_graphed_callables(
    callables: Any,
    sample_args: tuple[Any, ...],
    warmups: int = 0,
    allow_unused_input: bool = False,
    asynchronous: bool = False,
    disable_tensor_cache: bool = False,
    dry_run: bool = False,
) -> Any:
    """Graph the forward and backward of each callable (modules get their ``forward`` patched)."""
    return standin_make_graphed_callables(
        callables,
        sample_args,
        warmups=warmups,
        allow_unused_input=allow_unused_input,
        asynchronous=asynchronous,
        disable_tensor_cache=disable_tensor_cache,
        dry_run=dry_run,
        counters=machine.current().counters,
    )


class ModuleCacher(StandInModuleCacher):
    """``ModuleCacher(max_graphs)(model, ...)``: a training graph per input key, never evicting."""

    def __init__(self, max_graphs: int = 10) -> None:
        super().__init__(max_graphs, machine.current().counters)


def wrap_in_hpu_graph(
    module: Module,
    asynchronous: bool = False,
    disable_tensor_cache: bool = False,
    dry_run: bool | None = None,
    max_graphs: int | None = None,
) -> Module:
    """Patch ``module.forward`` to capture and replay an inference graph per input key."""
    return standin_wrap_in_hpu_graph(
        module,
        machine.current().counters,
        asynchronous=asynchronous,
        disable_tensor_cache=disable_tensor_cache,
        dry_run=dry_run,
        max_graphs=max_graphs,
    )
