"""``habana_frameworks.torch.utils.library_loader`` on the stand-in.

Older Gaudi scripts call ``load_habana_module()`` before using the device. On the stand-in the device is loaded by
importing the emulated bridge (this module imports its ``hpu`` module), so the loaders have nothing left to do.
"""

from __future__ import annotations

from gaudi_standin import device as _device
from gaudi_standin.bridge.habana_frameworks.torch import hpu

__all__ = ["is_habana_available", "load_habana_module", "load_habana_profiler"]


def is_habana_available() -> bool:
    """Whether the machine has an HPU (the bridge asks ``hl-smi``; the stand-in's device is always there)."""
    return hpu.is_available()


def load_habana_module() -> None:
    """Load the device's library: already loaded on the stand-in (this makes sure of it)."""
    _device.enable()


def load_habana_profiler() -> None:
    """Load the bridge's profiler library: the stand-in has none to load."""
