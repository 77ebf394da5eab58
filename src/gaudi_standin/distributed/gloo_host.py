"""Gloo on host views of ``hpu`` tensors: how the stand-in's ``"hccl"`` group moves data (the stand-in's device
memory is host memory, so gloo reads and writes it in place through CPU views)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.distributed as dist
from torch.utils._pytree import tree_map_only

from gaudi_standin import device as hpu_device


class GlooOnHostViews:
    """The gloo backend, handed host views of the stand-in's ``hpu`` tensors (gloo takes CPU tensors only).

    The views share the tensors' bytes, so gloo writes its results straight into the ``hpu`` tensors.
    """

    def __init__(self, gloo: Any) -> None:
        self._gloo = gloo

    def __getattr__(self, name: str) -> Callable[..., dist.Work]:
        method = getattr(self._gloo, name)

        def on_host(*args: Any) -> dist.Work:
            work: dist.Work = method(*tree_map_only(torch.Tensor, host, args))
            return work

        return on_host


def host(tensor: torch.Tensor) -> torch.Tensor:
    return hpu_device.host_view(tensor) if tensor.device.type == "hpu" else tensor


def as_list(tensors: torch.Tensor | Sequence[torch.Tensor]) -> list[torch.Tensor]:
    return [tensors] if isinstance(tensors, torch.Tensor) else list(tensors)
