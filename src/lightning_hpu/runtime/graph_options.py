"""The keyword options of the bridge's HPU-graph functions, declared once for the whole package.

The public functions (:mod:`lightning_hpu.hpu_graphs`), the seam (:class:`~lightning_hpu.runtime.HPUBackend`) and
the bridge call take them as ``**options: Unpack[...]``, so mypy checks every option a caller passes against these
declarations, and the backend's call against the bridge's typed stub. An option left out gets the bridge's default
(written beside each).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict


class GraphedCallablesOptions(TypedDict, total=False):
    """Options of ``make_graphed_callables(callables, sample_args, **options)``."""

    warmups: int  # 0: eager runs before capture
    allow_unused_input: bool  # False: an input that does not reach the outputs is an error
    asynchronous: bool  # False: replay waits for the device
    disable_tensor_cache: bool  # False: the graph keeps its intermediate tensors
    dry_run: bool  # False: capture runs the work too


class ModuleCacherOptions(TypedDict, total=False):
    """Options of ``ModuleCacher(max_graphs)(model, **options)``."""

    use_lfu: bool  # False: graph every key while there is room; True: the most frequent keys
    inplace: bool  # True: patch ``model`` itself; False: a shallow copy
    allow_unused_input: bool  # False
    asynchronous: bool  # False
    have_grad_accumulation: bool  # False: each micro-batch is a whole step
    log_frequency: int  # 100: calls between the cache's log lines (with ``verbose``)
    verbose: bool  # False
    disable_tensor_cache: bool  # False
    dry_run: bool  # False


class InferenceGraphOptions(TypedDict, total=False):
    """Options of ``wrap_in_hpu_graph(module, dry_run=None, **options)`` besides ``dry_run``."""

    asynchronous: bool  # False
    disable_tensor_cache: bool  # False
    max_graphs: int | None  # None: no limit


def check_option_names(options: Mapping[str, Any], declared: type, function: str) -> None:
    """Refuse, before any work, an option ``function`` does not have (a misspelling, say), listing the ones it has."""
    known = declared.__annotations__
    unknown = [name for name in options if name not in known]
    if unknown:
        raise TypeError(
            f"{function} got an unexpected keyword argument `{unknown[0]}`: its options are {', '.join(known)}."
        )


__all__ = ["GraphedCallablesOptions", "InferenceGraphOptions", "ModuleCacherOptions", "check_option_names"]
