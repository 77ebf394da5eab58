"""Tensors asked for on ``"hpu"`` land on the stand-in's device, the CPU.

:class:`HPUOnCPUMode` is a ``TorchFunctionMode``: it sees every torch call of the thread that activated it and
replaces an ``"hpu"`` device (``device="hpu"``, ``"hpu:0"``, ``torch.device("hpu")``, also positional in
``Tensor.to``) with the CPU. ``module.to("hpu")`` goes through ``Tensor.to`` and is covered too. Tensors then report
``device(type='cpu')``. It is pushed once, when the emulated ``habana_frameworks.torch`` is imported, and stays at
the bottom of that thread's mode stack: graph captures, autocast and ``torch.compile`` (Dynamo traces through it
without graph breaks) run above it. The cost is one Python call per torch call (see
``benchmarks/emulation_device_mode.py``); it is never active unless the emulation was imported.
"""

from __future__ import annotations

import threading
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

_CPU = torch.device("cpu")

#: Functions whose second positional argument may be a device.
_POSITIONAL_DEVICE = frozenset({torch.Tensor.to})


def _is_hpu(device: Any) -> bool:
    if isinstance(device, str):
        return device == "hpu" or device.startswith("hpu:")
    return isinstance(device, torch.device) and device.type == "hpu"


class HPUOnCPUMode(TorchFunctionMode):
    """Rewrites ``"hpu"`` devices to the CPU in every torch call."""

    def __torch_function__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        if kwargs:
            if _is_hpu(kwargs.get("device")):
                kwargs = {**kwargs, "device": _CPU}
        else:
            kwargs = {}
        if func in _POSITIONAL_DEVICE and len(args) > 1 and _is_hpu(args[1]):
            args = (args[0], _CPU, *args[2:])
        return func(*args, **kwargs)


_lock = threading.Lock()
_active: dict[int, HPUOnCPUMode] = {}


def activate() -> None:
    """Put ``"hpu"`` tensors on the CPU in the calling thread from now on (once per thread)."""
    with _lock:
        thread = threading.get_ident()
        if thread in _active:
            return
        mode = HPUOnCPUMode()
        mode.__enter__()
        _active[thread] = mode


def is_active() -> bool:
    """Whether the calling thread maps ``"hpu"`` to the CPU."""
    return threading.get_ident() in _active
