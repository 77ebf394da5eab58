"""The environment variables that choose and shape the runtime backend, validated in one place."""

from __future__ import annotations

import os

from lightning_hpu.runtime.base import HPUConfigurationError

BACKEND_ENV = "LIGHTNING_HPU_BACKEND"
#: The CPU stand-in's settings (read by the stand-in; named in messages and the env report).
CPU_DEVICES_ENV = "LIGHTNING_HPU_CPU_DEVICES"
CPU_DEVICE_NAME_ENV = "LIGHTNING_HPU_CPU_DEVICE_NAME"
LAZY_MODE_ENV = "PT_HPU_LAZY_MODE"
#: Where the CPU stand-in builds and keeps its device library (read by the stand-in; listed by the env report).
EXTENSIONS_DIR_ENV = "LIGHTNING_HPU_EXTENSIONS_DIR"

#: Accepted values of ``LIGHTNING_HPU_BACKEND``: ``cpu`` is the stand-in, ``hpu`` forces the bridge.
BACKEND_CHOICES = ("cpu", "hpu")


def requested_backend() -> str | None:
    """The backend named by ``LIGHTNING_HPU_BACKEND`` (``None`` when unset: detect a Gaudi)."""
    value = os.environ.get(BACKEND_ENV, "").strip().lower()
    if not value:
        return None
    if value not in BACKEND_CHOICES:
        raise HPUConfigurationError(
            f"{BACKEND_ENV}={os.environ[BACKEND_ENV]!r} is not a backend: set it to 'cpu' for the CPU stand-in,"
            f" to 'hpu' for a Gaudi, or unset it to detect a Gaudi."
        )
    return value


def lazy_mode_from_env() -> bool:
    """Lazy mode as current Gaudi software reads it: eager unless ``PT_HPU_LAZY_MODE`` is set to anything but ``0``.

    Intel Gaudi software after 1.19 runs eager by default and calls lazy mode legacy; ``PT_HPU_LAZY_MODE=1``
    selects it. An empty value counts as unset.
    """
    value = os.environ.get(LAZY_MODE_ENV, "").strip()
    return bool(value) and value != "0"


#: The bridge's per-process binding: the HPU module this process opens (written by ``initialize_distributed_hpu``).
MODULE_ID_ENV = "HLS_MODULE_ID"
#: The HPU modules a job may use, e.g. ``2,3``; local rank ``r`` binds to the ``r``-th of them.
VISIBLE_MODULES_ENV = "HABANA_VISIBLE_MODULES"


def visible_modules(installed: int) -> list[int]:
    """The module ids this job may use: ``HABANA_VISIBLE_MODULES``, or all ``installed`` modules when it is unset."""
    raw = os.environ.get(VISIBLE_MODULES_ENV, "").strip()
    if not raw:
        return list(range(installed))
    try:
        modules = [int(part) for part in raw.split(",")]
    except ValueError:
        modules = []
    if not modules or any(module < 0 for module in modules) or len(set(modules)) != len(modules):
        raise HPUConfigurationError(
            f"{VISIBLE_MODULES_ENV}={raw!r} is not a list of HPU module ids: use distinct non-negative integers"
            f" separated by commas, e.g. {VISIBLE_MODULES_ENV}=2,3."
        )
    return modules


def bound_module() -> int | None:
    """The module ``HLS_MODULE_ID`` binds this process to, or ``None`` when it is unset."""
    raw = os.environ.get(MODULE_ID_ENV, "").strip()
    if not raw:
        return None
    if not raw.isdigit():
        raise HPUConfigurationError(f"{MODULE_ID_ENV}={raw!r} must be an HPU module id such as 0, or unset.")
    return int(raw)


def lazy_mode_env_value() -> str:
    """The raw value of ``PT_HPU_LAZY_MODE`` (empty when unset), for messages."""
    return os.environ.get(LAZY_MODE_ENV, "")


def standin_requested() -> bool:
    """Whether ``LIGHTNING_HPU_BACKEND`` asks for the CPU stand-in (a cheap check that never raises)."""
    return os.environ.get(BACKEND_ENV, "").strip().lower() == "cpu"
