"""The runtime backend: the Intel Gaudi bridge (``habana_frameworks``), driven by :class:`BridgeBackend`.

There is one backend. On a Gaudi, ``habana_frameworks`` is the bridge of the Intel Gaudi software; without one,
``LIGHTNING_HPU_BACKEND=cpu`` makes the CPU stand-in serve ``habana_frameworks`` (its own package, reached only
through that import, as a Gaudi's bridge is), and the same backend code drives it. Nothing is opened at import. The
backend is created on first use and cached per process; child processes inherit ``LIGHTNING_HPU_BACKEND`` and so
make the same choice.

Imports (the layering test checks this paragraph): no Lightning package (Lightning-free, with all it imports);
nothing of this package.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import socket
import sys
import threading

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
from lightning_hpu.runtime.recipe_cache import apply_recipe_cache_from_env

__all__ = [
    "GAUDI_GENERATIONS",
    "HCCL_REDUCE_OPS",
    "MEMORY_STAT_KEYS",
    "HPUBackend",
    "HPUConfigurationError",
    "HPUFeatureUnavailableError",
    "HPUNotAvailableError",
    "bridge_emulated",
    "bridge_installed",
    "generation_rank",
    "get_backend",
    "hpu_available",
    "require_backend",
    "reset_backend",
]

_lock = threading.Lock()
_backend: HPUBackend | None = None

#: The name of the bridge's top-level package.
BRIDGE_PACKAGE = "habana_frameworks"
#: What the CPU stand-in's import hook puts in the ``origin`` of the ``habana_frameworks`` it serves.
EMULATED_ORIGIN_MARK = "cpu stand-in"


def _bridge_spec() -> importlib.machinery.ModuleSpec | None:
    try:
        return importlib.util.find_spec(BRIDGE_PACKAGE)
    except (ImportError, ValueError):
        return None


def bridge_emulated() -> bool:
    """Whether the ``habana_frameworks`` found here is the CPU stand-in's (checked without importing it)."""
    spec = _bridge_spec()
    return spec is not None and EMULATED_ORIGIN_MARK in (spec.origin or "")


def bridge_installed() -> bool:
    """Whether a real Intel Gaudi bridge can be imported here (the stand-in's emulation is left out)."""
    return _bridge_spec() is not None and not bridge_emulated()


def hpu_expected() -> bool:
    """Whether this machine is meant to run HPUs: a Gaudi bridge is installed, or ``LIGHTNING_HPU_BACKEND=cpu`` chose
    the stand-in. Elsewhere (a CPU or CUDA machine where lightning-hpu is merely installed) the package stays silent:
    no start-up line, no version warning. Nothing is imported to decide, and nothing raises: a bad
    ``LIGHTNING_HPU_BACKEND`` is refused where the HPU is asked for (:func:`get_backend`)."""
    return settings.standin_requested() or bridge_installed()


def _create_backend() -> HPUBackend | None:
    requested = settings.requested_backend()
    if _bridge_spec() is None:
        return None
    if bridge_emulated() and requested != "cpu":
        return None  # the stand-in serves only while LIGHTNING_HPU_BACKEND=cpu chooses it
    apply_recipe_cache_from_env()  # a bad LIGHTNING_HPU_RECIPE_CACHE, let pass at import, is refused here
    _claim_a_port_before_the_bridge()
    from lightning_hpu.runtime.bridge import BridgeBackend

    return BridgeBackend()


#: Variables that mark a rank an outside launcher started (the ranks' port is the launcher's, or the bridge's default).
_LAUNCHER_VARIABLES = ("WORLD_SIZE", "RANK", "LOCAL_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS")


def _claim_a_port_before_the_bridge() -> None:
    """Importing the bridge runs its ``initialize_distributed_hpu``, which sets ``MASTER_PORT=12345`` where no launcher
    set a port, so two runs on one host would meet there. A free port comes first, as Lightning's own environment
    would pick one. A rank of an outside launcher (torchrun, mpirun, SLURM), whose ranks must agree on one port, and
    a process that imported the bridge already, are left alone."""
    if "MASTER_PORT" in os.environ or "habana_frameworks.torch" in sys.modules:
        return
    if any(name in os.environ for name in _LAUNCHER_VARIABLES):
        return
    with socket.socket() as probe:
        probe.bind(("", 0))
        os.environ["MASTER_PORT"] = str(probe.getsockname()[1])


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
    if backend is None and settings.standin_requested():
        raise HPUNotAvailableError(
            f"HPU was requested with {settings.BACKEND_ENV}=cpu, but the CPU stand-in's habana_frameworks is not in"
            f" place: set {settings.BACKEND_ENV}=cpu before Python starts (or before `import torch`), in an"
            " environment where lightning-hpu was installed with pip."
        )
    if backend is None:
        reason = "the Intel Gaudi bridge (habana_frameworks) is not installed"
    else:
        reason = "the Intel Gaudi bridge sees no Gaudi device"
    raise HPUNotAvailableError(
        f"HPU was requested but {reason}; run on a Gaudi machine, or set"
        f" {settings.BACKEND_ENV}=cpu to use the CPU stand-in."
    )
