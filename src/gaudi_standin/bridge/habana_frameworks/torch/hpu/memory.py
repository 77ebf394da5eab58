"""``habana_frameworks.torch.hpu.memory`` on the stand-in: the bridge's memory module, the figures of the emulated HBM.

The bridge defines its memory functions here and ``habana_frameworks.torch.hpu`` exposes them; the stand-in defines
them in ``hpu`` and this module serves the same objects under the bridge's module path, plus the deprecated
``memory_cached`` names the bridge keeps (they warn and return what ``memory_reserved`` does, the limit), and
``_get_hlml_shared_object_name``, where the memory in use is published for Habana's management library.
"""

from __future__ import annotations

import warnings

from gaudi_standin.bridge.habana_frameworks.torch.hpu import (
    _Device,
    _get_device_index,
    max_memory_allocated,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    memory_stats,
    reset_accumulated_memory_stats,
    reset_max_memory_allocated,
    reset_peak_memory_stats,
)

__all__ = [
    "max_memory_allocated",
    "max_memory_cached",
    "max_memory_reserved",
    "mem_get_info",
    "memory_allocated",
    "memory_cached",
    "memory_reserved",
    "memory_stats",
    "reset_accumulated_memory_stats",
    "reset_max_memory_allocated",
    "reset_peak_memory_stats",
]


def _get_hlml_shared_object_name(device: _Device = None) -> str:
    """The name (under ``/dev/shm``) of the shared-memory object where the device's memory in use is published
    each second for Habana's management library (:mod:`gaudi_standin.emulator.hlml_memory`)."""
    from gaudi_standin.emulator import hlml_memory

    index = 0 if device is None else _get_device_index(device)
    return hlml_memory.shared_object_name(index, lambda: memory_allocated(index))


def memory_cached(device: _Device = None) -> int:
    """The bridge's deprecated name of ``memory_reserved``."""
    warnings.warn("torch.hpu.memory_cached has been renamed to torch.hpu.memory_reserved", FutureWarning, stacklevel=2)
    return memory_reserved(device)


def max_memory_cached(device: _Device = None) -> int:
    """The bridge's deprecated name of ``max_memory_reserved``."""
    warnings.warn(
        "torch.hpu.max_memory_cached has been renamed to torch.hpu.max_memory_reserved", FutureWarning, stacklevel=2
    )
    return max_memory_reserved(device)
