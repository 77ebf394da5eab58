"""The CPU stand-in's ``hpu``: torch's own HPU device type, made real on a CPU build of torch.

Tensors on ``hpu:N`` keep their bytes in host memory, but they are HPU tensors in every other respect: they report
``device(type='hpu', index=N)``, torch refuses to mix them with host tensors or with another HPU's, ops on them run
the CPU's kernels without copies, ``torch.autocast("hpu")`` casts by the bridge's op lists, and the bytes of live
tensors are counted per device (:func:`memory_stats`). A small C++ library provides the device guard, allocator,
hooks and kernels (``csrc/``; see :mod:`.library` for how it is built and cached).

:func:`enable` loads it and registers the emulated ``habana_frameworks.torch.hpu`` as ``torch.hpu``. The stand-in
backend calls it when it is created, and importing ``torch.hpu`` with ``LIGHTNING_HPU_BACKEND=cpu`` does too (torch
imports it when a tensor is first put on ``"hpu"``), so a script that uses the device first gets it as on a Gaudi.
"""

from __future__ import annotations

import atexit
import threading
import time
from pathlib import Path
from typing import NamedTuple

import torch

from gaudi_standin.device.library import DeviceLibraryError, is_loaded, load_device_library

__all__ = [
    "DeviceLibraryError",
    "DeviceMemory",
    "current_device",
    "device_count",
    "enable",
    "host_view",
    "is_loaded",
    "memory_stats",
    "reset_peak_memory_stats",
    "set_device",
    "set_device_count",
    "set_memory_limit",
    "set_process_device",
]

_lock = threading.RLock()
_enabled = False


class DeviceMemory(NamedTuple):
    """Bytes and allocations of one emulated HPU, counted by the library's allocator."""

    in_use: int
    peak: int
    allocations: int
    frees: int
    active: int
    largest_allocation: int


def _ops() -> torch._ops._OpNamespace:
    return torch.ops.lightning_hpu_standin


def enable() -> None:
    """Load the device library (once per process); the emulated bridge's ``hpu`` module registers as ``torch.hpu``."""
    global _enabled
    with _lock:
        if _enabled:
            return
        _enabled = True
        load_device_library()
        atexit.register(_drain_autograd_worker)


def _autograd_device_threads() -> list[Path]:
    """The ``/proc`` entries of torch's per-device autograd threads (named ``pt_autograd_<N>``), if they run."""
    try:
        tasks = list(Path("/proc/self/task").iterdir())
        return [task for task in tasks if (task / "comm").read_text().startswith("pt_autograd_")]
    except OSError:  # not Linux, or a thread ended while listed
        return []


def _all_waiting(threads: list[Path]) -> bool:
    """Whether every one of ``threads`` is blocked (state ``S``): waiting for work, holding nothing."""
    try:
        return all((thread / "stat").read_text().rsplit(")", 1)[1].split()[0] == "S" for thread in threads)
    except (OSError, IndexError):
        return True


def _drain_autograd_worker() -> None:
    """Let torch's autograd threads for hpu release every finished backward before the interpreter shuts down.

    Backward passes over hpu tensors run on torch's per-device autograd threads, which can hold the last reference
    to a finished graph (and the Python objects of the thread-local state it captured) for a moment after
    ``backward()`` returned. Released while Python finalizes, that reference aborts the process ("terminate called
    without an active exception"). So, while Python is fully alive: a tiny backward runs through the threads (each
    serves one graph at a time, so every earlier graph is done when it returns), and then this waits, giving up the
    GIL, until the threads are idle again, blocked on their queues with nothing left to release (at most 2 s).
    Nothing happens where no autograd thread was started (starting them now would create the race it removes).
    """
    threads = _autograd_device_threads()
    if not threads:
        return

    def tiny_backward() -> None:
        try:
            leaf = torch.zeros((), device="hpu", requires_grad=True)
            leaf.sum().backward()
        except Exception:  # nothing to drain (autograd already torn down)
            pass

    drain = threading.Thread(target=tiny_backward, name="lightning-hpu-autograd-drain")
    try:
        drain.start()
        drain.join(timeout=10)
    except RuntimeError:  # Python 3.12+ starts no thread once its shutdown began: run it here instead
        tiny_backward()
    idle_polls = 0
    for _ in range(400):
        idle_polls = idle_polls + 1 if _all_waiting(threads) else 0
        if idle_polls >= 3:
            return
        time.sleep(0.005)


def device_count() -> int:
    """Number of emulated HPUs (``LIGHTNING_HPU_CPU_DEVICES``)."""
    return int(_ops().device_count())


def current_device() -> int:
    """The calling thread's current HPU index."""
    return int(_ops().current_device())


def set_device(index: int) -> None:
    """Make ``hpu:index`` the calling thread's current HPU."""
    _ops().set_device(index)


def set_process_device(index: int) -> None:
    """Make ``hpu:index`` the process's HPU: the current one of every thread that did not choose its own."""
    _ops().set_process_device(index)


def memory_stats(index: int) -> DeviceMemory:
    """The allocator's counts for ``hpu:index``."""
    return DeviceMemory(*(int(value) for value in _ops().memory_stats(index)))


def reset_peak_memory_stats(index: int) -> None:
    """Start the peak (and the largest allocation) of ``hpu:index`` again from what is in use now."""
    _ops().reset_peak_memory_stats(index)


def set_device_count(count: int) -> None:
    """Emulate ``count`` HPUs from now on (the stand-in backend sets the count it reads from the environment)."""
    _ops().set_device_count(count)


def set_memory_limit(nbytes: int) -> None:
    """Refuse allocations that would put more than ``nbytes`` on one HPU (its HBM), as the device runs out."""
    _ops().set_memory_limit(nbytes)


def host_view(tensor: torch.Tensor) -> torch.Tensor:
    """A host tensor over the bytes of an ``hpu`` tensor (no copy), for libraries that take CPU tensors only."""
    return _ops().host_view(tensor)
