"""A dry-run HPU graph capture: the ops are recorded, and the capture leaves the program's tensors as they were.

On a Gaudi, ``capture_begin(dry_run=True)`` (which the bridge's graph wrappers use whenever the tensor cache is off)
records the graph without executing it: only replays change the parameters, buffers and state the graph writes in
place, so the call that captures and then replays updates them once. The stand-in computes during every capture (it
needs the values to record the ops); in a dry run it keeps a copy of each tensor that existed before the capture
the first time an op writes it, and puts the copies back when the capture ends. Tensors the capture itself allocated
(the graph's memory) keep their values.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._pytree import tree_leaves


def written_tensors(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[torch.Tensor]:
    """The tensors ``func`` writes in place (its ``Tensor(a!)`` arguments)."""
    written: list[torch.Tensor] = []
    for index, argument in enumerate(func._schema.arguments):
        if argument.alias_info is None or not argument.alias_info.is_write:
            continue
        value = args[index] if index < len(args) else kwargs.get(argument.name)
        written += [leaf for leaf in tree_leaves(value) if isinstance(leaf, torch.Tensor)]
    return written


class StateKeeper:
    """Copies of the pre-existing storages a dry-run capture writes, restored at its end."""

    def __init__(self) -> None:
        self._fresh: set[int] = set()
        self._saved: dict[int, tuple[torch.UntypedStorage, torch.UntypedStorage]] = {}

    def before(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Keep a copy of each storage ``func`` is about to write that the capture did not allocate."""
        for tensor in written_tensors(func, args, kwargs):
            storage = tensor.untyped_storage()
            key = storage.data_ptr()
            if storage.nbytes() and key not in self._fresh and key not in self._saved:
                self._saved[key] = (storage, storage.clone())

    def allocated(self, outputs: list[torch.Tensor]) -> None:
        """Note the storages the capture allocated (an op's fresh outputs)."""
        self._fresh.update(output.untyped_storage().data_ptr() for output in outputs)

    def restore(self) -> None:
        """Put back what the capture overwrote."""
        for storage, copy in self._saved.values():
            storage.copy_(copy)
        self._saved.clear()
