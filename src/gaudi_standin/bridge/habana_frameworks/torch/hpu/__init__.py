"""``habana_frameworks.torch.hpu`` (also ``torch.hpu`` and ``htcore.hpu``) on the stand-in.

It is also ``torch.hpu``, torch's device module for the ``hpu`` device type, which the stand-in makes real
(:mod:`gaudi_standin.device`): importing it loads that device, and torch imports it the first time
a tensor goes to ``"hpu"``. Devices, synchronisation and memory statistics (the bytes of live ``hpu`` tensors) come
from the emulated Gaudi (:mod:`gaudi_standin.emulator.machine`); random numbers on ``hpu`` come from the host's
generator, so ``torch.manual_seed`` makes them reproducible. The HPU-graph API (``HPUGraph``, ``graph``,
``make_graphed_callables``, ``ModuleCacher``, ``wrap_in_hpu_graph``, :mod:`gaudi_standin.graphs.bridge_api`)
exists, as in the bridge (1.19), only in lazy mode: in eager mode these names are missing (``AttributeError``, saying
what to do).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from gaudi_standin import device as _device
from gaudi_standin.bridge.habana_frameworks.torch.hpu._utils import _get_device_index
from gaudi_standin.bridge.habana_frameworks.torch.hpu.events import Event
from gaudi_standin.bridge.habana_frameworks.torch.hpu.random import (
    get_rng_state,
    get_rng_state_all,
    initial_seed,
    manual_seed,
    manual_seed_all,
    seed,
    seed_all,
    set_rng_state,
    set_rng_state_all,
)
from gaudi_standin.bridge.habana_frameworks.torch.hpu.streams import (
    Stream,
    StreamContext,
    current_stream,
    default_stream,
    get_stream_info,
    record_stream,
    set_stream,
    stream,
)
from gaudi_standin.emulator import machine
from gaudi_standin.emulator.dynamic_shapes import disable_optim_output_sif, enable_optim_output_sif  # noqa: F401
from gaudi_standin.emulator.environment import LAZY_MODE_ENV

__all__ = [
    "Event",
    "Stream",
    "StreamContext",
    "_get_device_index",
    "current_device",
    "current_stream",
    "default_stream",
    "device",
    "device_count",
    "enable_recompute_sdp",
    "get_device_name",
    "get_rng_state",
    "get_rng_state_all",
    "get_stream_info",
    "initial_seed",
    "input_hash",
    "is_available",
    "is_bf16_supported",
    "manual_seed",
    "manual_seed_all",
    "max_memory_allocated",
    "max_memory_reserved",
    "mem_get_info",
    "memory_allocated",
    "memory_reserved",
    "memory_stats",
    "recompute_sdp_enabled",
    "record_stream",
    "reset_accumulated_memory_stats",
    "reset_max_memory_allocated",
    "reset_peak_memory_stats",
    "sdp_kernel",
    "seed",
    "seed_all",
    "set_device",
    "set_rng_ctx",
    "set_rng_state",
    "set_rng_state_all",
    "set_stream",
    "stream",
    "synchronize",
    "unset_rng_ctx",
]

_Device = int | str | torch.device | None

#: The bridge's graph API (with the helpers of :mod:`gaudi_standin.graphs.helpers`), served from the package in lazy
#: mode only.
GRAPH_API = (
    "HPUGraph",
    "graph",
    "make_graphed_callables",
    "ModuleCacher",
    "wrap_in_hpu_graph",
    "CachedParams",
    "TensorPacker",
    "copy_to",
)


def _index(device: _Device) -> int:
    """The device index of ``device`` as the bridge reads it (``None`` and plain ``"hpu"``: the current one)."""
    if isinstance(device, int):
        return device
    if device is None:
        return current_device()
    parsed = torch.device(device)
    if parsed.type != "hpu":
        raise ValueError(f"Expected a hpu device, but got: {device!r}.")
    return current_device() if parsed.index is None else parsed.index


def _checked_index(device: _Device) -> int:
    index = _index(device)
    if not 0 <= index < device_count():
        raise ValueError(f"Invalid device id {index}: the stand-in emulates {device_count()} HPU(s).")
    return index


def is_available() -> bool:
    """Whether an HPU can be used (always, on the stand-in)."""
    return machine.current().is_available()


def device_count() -> int:
    """The number of emulated HPUs (``LIGHTNING_HPU_CPU_DEVICES``)."""
    return machine.current().device_count()


def get_device_name(device: _Device = None) -> str:
    """The emulated generation: ``"GAUDI"``, ``"GAUDI2"`` or ``"GAUDI3"`` (``LIGHTNING_HPU_CPU_DEVICE_NAME``)."""
    _checked_index(device)
    return machine.current().device_name()


def current_device() -> int:
    """The index of the current HPU (the module this process is bound to, unless the thread chose another)."""
    return machine.current().current_device()


def is_initialized() -> bool:
    """Whether the device is ready (torch asks before it lazily initialises a device)."""
    return _device.is_loaded()


def _lazy_init() -> None:
    """What torch calls before the first tensor goes to ``"hpu"``: the stand-in's device and backend are ready."""
    machine.current()


def _is_in_bad_fork() -> bool:
    """A forked child can use the stand-in's device (its memory is host memory), unlike a Gaudi's runtime."""
    return False


class device:
    """Context manager that makes ``device`` the current HPU of the thread inside it (``torch.hpu.device(1)``)."""

    def __init__(self, device: _Device) -> None:
        self.index = _checked_index(device)
        self.previous = -1

    def __enter__(self) -> None:
        self.previous = current_device()
        _device.set_device(self.index)

    def __exit__(self, *exc: object) -> None:
        _device.set_device(self.previous)


#: The ``device`` context manager under a name that the bridge's ``device=`` parameters do not shadow.
_on_device = device


def set_rng_ctx(name: str) -> None:
    """Select the bridge's random-number context (``"philox"`` for DTensor); the stand-in has one generator."""


def unset_rng_ctx(name: str) -> None:
    """Leave the random-number context :func:`set_rng_ctx` selected."""


def set_device(device: _Device) -> None:
    """Bind this process to an HPU (an index, ``"hpu:N"`` or a ``torch.device``)."""
    machine.current().set_device(_index(device))


def synchronize(device: _Device = None) -> None:
    """Wait for the device; in lazy mode this also marks a step, as on a Gaudi."""
    machine.current().synchronize()


def memory_stats(device: _Device = None) -> dict[str, int]:
    """Memory statistics with the bridge's ten keys (``Limit``, ``InUse``, ``MaxInUse``, ...) of an HPU."""
    index = _checked_index(device)
    with _on_device(index):
        return machine.current().memory_stats()


def memory_allocated(device: _Device = None) -> int:
    """Memory in use (``InUse``)."""
    return memory_stats(device)["InUse"]


def max_memory_allocated(device: _Device = None) -> int:
    """Peak memory in use since the last reset (``MaxInUse``)."""
    return memory_stats(device)["MaxInUse"]


def reset_peak_memory_stats(device: _Device = None) -> None:
    """Reset ``MaxInUse`` to the memory in use now."""
    _device.reset_peak_memory_stats(_checked_index(device))


def reset_max_memory_allocated(device: _Device = None) -> None:
    """The bridge's (and torch.cuda's) older name of :func:`reset_peak_memory_stats`."""
    reset_peak_memory_stats(device)


def reset_accumulated_memory_stats(device: _Device = None) -> None:
    """Reset the allocation counters (the stand-in keeps none)."""


def memory_reserved(device: _Device = None) -> int:
    """The bridge returns the memory limit here (``Limit``), not a cache figure."""
    return memory_stats(device)["Limit"]


def mem_get_info(device: _Device = None) -> tuple[int, int]:
    """``(free, total)`` as the bridge computes it: ``(Limit - InUse, Limit)``."""
    stats = memory_stats(device)
    return stats["Limit"] - stats["InUse"], stats["Limit"]


def max_memory_reserved(device: _Device = None) -> int:
    """As :func:`memory_reserved`: the bridge returns ``Limit``."""
    return memory_reserved(device)


def is_bf16_supported() -> bool:
    """bf16 runs on every Gaudi."""
    return is_available()


def __getattr__(name: str) -> Any:
    """The graph API, in lazy mode only; the ``graphs`` and ``metrics`` submodules, imported on first use."""
    if name in SUBMODULES:
        import importlib

        return importlib.import_module(f"habana_frameworks.torch.hpu.{name}")
    if name not in GRAPH_API:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if not machine.current().is_lazy():
        raise AttributeError(
            f"habana_frameworks.torch.hpu has no attribute {name!r} in eager mode: HPU graphs need the legacy lazy"
            f" mode (set {LAZY_MODE_ENV}=1 before starting Python), or use torch.compile(backend='hpu_backend')."
        )
    from gaudi_standin.graphs import bridge_api

    return getattr(bridge_api, name)


# --- bridge switches beyond devices and memory --------------------------------------------------------------------
#: The bridge's ``hpu`` package has these submodules (``metrics`` starts the stand-in's compilation counting).
SUBMODULES = ("_utils", "events", "graphs", "memory", "metrics", "random", "streams")


def enable_dynamic_shape() -> None:
    """Compile graphs for ranges of sizes: new sizes of a known graph no longer count as recompilations."""
    from gaudi_standin.emulator import dynamic_shapes

    dynamic_shapes.set_enabled(True)


def disable_dynamic_shape() -> None:
    """Compile graphs for their concrete sizes (the default): each new size counts as a recompilation."""
    from gaudi_standin.emulator import dynamic_shapes

    dynamic_shapes.set_enabled(False)


def get_dynamic_shape_status() -> bool:
    """Whether dynamic shapes are on (the last switch, else ``PT_HPU_ENABLE_REFINE_DYNAMIC_SHAPES``)."""
    from gaudi_standin.emulator import dynamic_shapes

    return dynamic_shapes.enabled()


def is_autocast_hpu_enabled() -> bool:
    """Whether the device's autocast is active on this thread (``torch.autocast(device_type="hpu")``)."""
    return torch.is_autocast_enabled("hpu")


def input_hash(obj: Any) -> int:
    """The bridge's hash of a call's inputs, as its graph caches key them: shapes, view layouts, other values and
    the autocast state (the stand-in's graph caches key calls the same way, in :mod:`gaudi_standin.graphs.keys`)."""
    from gaudi_standin.graphs.keys import walk

    return hash((walk([obj], []), is_autocast_hpu_enabled()))


def get_autocast_hpu_dtype() -> torch.dtype:
    """The dtype the device's autocast lowers to (bf16 unless a region chose another)."""
    return torch.get_autocast_dtype("hpu")


#: Whether ``hpex.kernels.FusedSDPA`` recomputes in its backward when its call does not say (on by default, as in
#: the bridge). The stand-in's values are the same either way; the choice decides which arguments FusedSDPA accepts.
_recompute_sdp = True


def enable_recompute_sdp(enabled: bool) -> None:
    """Make ``FusedSDPA`` recompute (``True``) or keep its probabilities (``False``) when a call does not choose."""
    global _recompute_sdp
    _recompute_sdp = bool(enabled)


def recompute_sdp_enabled() -> bool:
    """Whether ``FusedSDPA`` recomputes by default (:func:`enable_recompute_sdp`)."""
    return _recompute_sdp


@contextmanager
def sdp_kernel(enable_recompute: bool = True) -> Iterator[dict[str, Any]]:
    """Switch ``FusedSDPA``'s recomputation inside the block (restored after it), as the bridge's context manager."""
    previous = recompute_sdp_enabled()
    enable_recompute_sdp(enable_recompute)
    try:
        yield {}
    finally:
        enable_recompute_sdp(previous)


# Importing this module (as ``torch.hpu``, or through ``habana_frameworks``) makes the ``hpu`` device real, with this
# module as torch's device module for it.
_device.enable()
if not hasattr(torch, "hpu"):
    torch._register_device_module("hpu", sys.modules[__name__])
