"""Choosing the runtime backend: a real Gaudi through the bridge, or the CPU stand-in.

Nothing is opened at import. The backend is created on first use and cached per process; child processes inherit
``LIGHTNING_HPU_BACKEND`` and so make the same choice.
"""

from __future__ import annotations

import importlib.util
import threading

import _lightning_hpu_emulation
from lightning_hpu.runtime import settings
from lightning_hpu.runtime.base import (
    GAUDI_GENERATIONS,
    HCCL_REDUCE_OPS,
    MEMORY_STAT_KEYS,
    HPUBackend,
    HPUConfigurationError,
    HPUFeatureUnavailableError,
    HPUNotAvailableError,
    generation_rank,
)

__all__ = [
    "GAUDI_GENERATIONS",
    "HCCL_REDUCE_OPS",
    "MEMORY_STAT_KEYS",
    "HPUBackend",
    "HPUConfigurationError",
    "HPUFeatureUnavailableError",
    "HPUNotAvailableError",
    "bridge_installed",
    "generation_rank",
    "get_backend",
    "hpu_available",
    "require_backend",
    "reset_backend",
]

_lock = threading.Lock()
_backend: HPUBackend | None = None

# A script that imports the package before ``habana_frameworks`` gets the emulation without the start-up hook.
_lightning_hpu_emulation.install_if_requested()


def bridge_installed() -> bool:
    """Whether the real Habana bridge can be imported here (checked without importing it).

    The stand-in's emulation of ``habana_frameworks`` is importable too, but it is not a bridge: it is left out.
    """
    try:
        spec = importlib.util.find_spec("habana_frameworks")
    except (ImportError, ValueError):
        return False
    return spec is not None and not _lightning_hpu_emulation.is_emulated(spec)


def _create_backend() -> HPUBackend | None:
    requested = settings.requested_backend()
    if requested == "cpu":
        from lightning_hpu.runtime.standin import CPUStandInBackend

        return CPUStandInBackend()
    if requested == "hpu" or bridge_installed():
        if not bridge_installed():
            return None
        from lightning_hpu.runtime.bridge import BridgeBackend

        return BridgeBackend()
    return None


def get_backend() -> HPUBackend | None:
    """The backend of this process, or ``None`` when there is neither a Gaudi bridge nor the stand-in."""
    global _backend
    with _lock:
        if _backend is None:
            _backend = _create_backend()
        return _backend


def reset_backend() -> None:
    """Forget the cached backend so the next :func:`get_backend` reads the environment again (tests use this)."""
    global _backend
    with _lock:
        if _backend is not None:
            _backend.close()
        _backend = None


def hpu_available() -> bool:
    """Whether HPU can be used: a Gaudi is visible, or the stand-in was chosen."""
    backend = get_backend()
    return backend is not None and backend.is_available()


def require_backend() -> HPUBackend:
    """The backend, or an :class:`HPUNotAvailableError` that says in one sentence how to get one."""
    backend = get_backend()
    if backend is not None and backend.is_available():
        return backend
    if backend is None:
        reason = "the Intel Gaudi bridge (habana_frameworks) is not installed"
    else:
        reason = "the Intel Gaudi bridge sees no Gaudi device"
    raise HPUNotAvailableError(
        f"HPU was requested but {reason}; run on a Gaudi machine, or set"
        f" {settings.BACKEND_ENV}=cpu to use the CPU stand-in."
    )
