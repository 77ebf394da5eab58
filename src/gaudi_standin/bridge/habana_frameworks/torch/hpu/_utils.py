"""``habana_frameworks.torch.hpu._utils._get_device_index`` on the stand-in (also ``torch.hpu._get_device_index``).

The bridge's streams, events, memory and random-state functions read their ``device`` arguments through it, and so
do programs written for a Gaudi (DeepSpeed, optimum-habana): an int passes as it is, an ``hpu`` device gives its
index, and a device without an index (or ``None``) gives the current HPU only when ``optional`` allows it.
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["_get_device_index"]


def _get_device_index(device: Any, optional: bool = False, allow_cpu: bool = False) -> int:
    """The HPU index ``device`` names (``-1`` for a CPU device when ``allow_cpu``), as the bridge reads it."""
    if isinstance(device, int):
        return device
    if isinstance(device, str):
        device = torch.device(device)
    index: int | None = None
    if isinstance(device, torch.device):
        accepted = ("hpu", "cpu") if allow_cpu else ("hpu",)
        if device.type not in accepted:
            raise ValueError(f"Expected a {' or '.join(accepted)} device, but got: {device}")
        index = -1 if device.type == "cpu" else device.index
    elif device is not None:
        raise ValueError(f"Expected a torch.device, a device string or an integer, but got: {device!r}")
    if index is None:
        if not optional:
            raise ValueError(f"Expected a torch.device with a specified index or an integer, but got: {device}")
        index = int(torch.ops.lightning_hpu_standin.current_device())
    return index
