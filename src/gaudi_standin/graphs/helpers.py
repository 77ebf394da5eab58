"""The bridge's HPU-graph helpers that hold no graph themselves: ``CachedParams``, ``copy_to`` and ``TensorPacker``.

Diffusers pipelines of optimum-habana keep their own graph cache with them: a ``CachedParams`` per input hash
(static inputs, outputs and the ``HPUGraph``), ``copy_to`` to refresh the static inputs before a replay.
``TensorPacker`` flattens nested tuples, lists and dicts to a tuple of tensors and back (the bridge's
``ModuleCacher`` feeds its graphs that way).
"""

from __future__ import annotations

import copy
from typing import Any

import torch

__all__ = ["CachedParams", "TensorPacker", "copy_to"]


class CachedParams:
    """One cached graph: its static inputs and outputs, the graph, and how it replays (the bridge's fields)."""

    def __init__(
        self,
        graph_inputs: Any,
        graph_outputs: Any,
        graph: Any,
        out_tinfo_list: Any = None,
        asynchronous: bool = False,
    ) -> None:
        self.graph_inputs = graph_inputs
        self.graph_outputs = graph_outputs
        self.graph = graph
        self.out_tinfo_list = out_tinfo_list
        self.asynchronous = asynchronous


def copy_to(dst: Any, src: Any) -> None:
    """Copy the tensors of ``src`` into the same places of ``dst`` (nested dicts, lists, tuples); other values stay.

    Both must have the same structure, as the bridge asserts (the types of each level, and a dict's keys in order).
    """
    if type(dst) is not type(src):
        raise AssertionError(f"copy_to: a {type(dst).__name__} cannot receive a {type(src).__name__}.")
    if isinstance(dst, dict):
        for (dst_key, dst_value), (src_key, src_value) in zip(dst.items(), src.items(), strict=False):
            if dst_key != src_key:
                raise AssertionError(f"copy_to: key {src_key!r} arrives where {dst_key!r} is.")
            copy_to(dst_value, src_value)
    elif isinstance(dst, list) or (isinstance(dst, tuple) and not isinstance(dst, torch.Size)):
        for dst_item, src_item in zip(dst, src, strict=False):
            copy_to(dst_item, src_item)
    elif torch.is_tensor(dst):
        dst.copy_(src, non_blocking=True)


class TensorPacker:
    """``pack(nested) -> (tensors, metadata)`` and ``unpack(tensors, metadata) -> nested``, the inverse.

    The metadata is the nested structure with each tensor replaced by its :class:`Index` in the tuple; other values
    are kept in it as they are (so they come back unchanged, and are not inputs of a graph).
    """

    class Index:
        """Where a tensor of the structure sits in the packed tuple."""

        def __init__(self, value: int) -> None:
            self.value = value

        def __repr__(self) -> str:
            return f"#{self.value:d}"

    def __init__(self, is_out_pack: bool = False, verbose: bool = False) -> None:
        self._is_out_pack = is_out_pack
        self._verbose = verbose

    def pack(self, outs: Any) -> tuple[tuple[torch.Tensor, ...], Any]:
        tensors: list[torch.Tensor] = []
        metadata = self._pack(outs, tensors)
        return tuple(tensors), metadata

    def _pack(self, value: Any, tensors: list[torch.Tensor]) -> Any:
        if torch.is_tensor(value):
            tensors.append(value)
            return self.Index(len(tensors) - 1)
        if isinstance(value, tuple) and not isinstance(value, torch.Size):
            return tuple(self._pack(item, tensors) for item in value)
        if isinstance(value, list | dict):
            packed = copy.copy(value)
            for key in range(len(value)) if isinstance(value, list) else value:
                packed[key] = self._pack(value[key], tensors)
            return packed
        if self._verbose:
            print(f"[WARNING] Variable of type {type(value)} will not be dynamic")
        return value

    def unpack(self, tensors: Any, metadata: Any) -> Any:
        if isinstance(metadata, self.Index):
            return tensors[metadata.value]
        if isinstance(metadata, tuple) and not isinstance(metadata, torch.Size):
            return tuple(self.unpack(tensors, item) for item in metadata)
        if isinstance(metadata, list | dict):
            unpacked = copy.copy(metadata)
            for key in range(len(metadata)) if isinstance(metadata, list) else metadata:
                unpacked[key] = self.unpack(tensors, metadata[key])
            return unpacked
        return metadata
