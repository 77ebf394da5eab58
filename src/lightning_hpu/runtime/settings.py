"""The environment variables that choose and shape the runtime backend, validated in one place."""

from __future__ import annotations

import os

from lightning_hpu.runtime.base import GAUDI_GENERATIONS

BACKEND_ENV = "LIGHTNING_HPU_BACKEND"
CPU_DEVICES_ENV = "LIGHTNING_HPU_CPU_DEVICES"
CPU_DEVICE_NAME_ENV = "LIGHTNING_HPU_CPU_DEVICE_NAME"
LAZY_MODE_ENV = "PT_HPU_LAZY_MODE"

#: Accepted values of ``LIGHTNING_HPU_BACKEND``: ``cpu`` is the stand-in, ``hpu`` forces the bridge.
BACKEND_CHOICES = ("cpu", "hpu")


def requested_backend() -> str | None:
    """The backend named by ``LIGHTNING_HPU_BACKEND`` (``None`` when unset: detect a Gaudi)."""
    value = os.environ.get(BACKEND_ENV, "").strip().lower()
    if not value:
        return None
    if value not in BACKEND_CHOICES:
        raise ValueError(
            f"{BACKEND_ENV}={os.environ[BACKEND_ENV]!r} is not a backend: set it to 'cpu' for the CPU stand-in,"
            f" to 'hpu' for a Gaudi, or unset it to detect a Gaudi."
        )
    return value


def cpu_device_count() -> int:
    """Emulated device count of the stand-in (``LIGHTNING_HPU_CPU_DEVICES``, default 1)."""
    raw = os.environ.get(CPU_DEVICES_ENV, "1").strip()
    try:
        count = int(raw)
    except ValueError:
        count = 0
    if count < 1:
        raise ValueError(f"{CPU_DEVICES_ENV}={raw!r} must be a positive integer, e.g. {CPU_DEVICES_ENV}=2.")
    return count


def cpu_device_name() -> str:
    """Emulated Gaudi generation of the stand-in (``LIGHTNING_HPU_CPU_DEVICE_NAME``, default GAUDI2)."""
    raw = os.environ.get(CPU_DEVICE_NAME_ENV, "GAUDI2").strip().upper()
    if raw not in GAUDI_GENERATIONS:
        raise ValueError(
            f"{CPU_DEVICE_NAME_ENV}={os.environ[CPU_DEVICE_NAME_ENV]!r} is not a Gaudi generation:"
            f" use one of {', '.join(GAUDI_GENERATIONS)}."
        )
    return raw


def lazy_mode_from_env() -> bool:
    """Lazy mode as current Gaudi software reads it: eager unless ``PT_HPU_LAZY_MODE`` is set to anything but ``0``.

    Intel Gaudi software after 1.19 runs eager by default and calls lazy mode legacy; ``PT_HPU_LAZY_MODE=1``
    selects it. An empty value counts as unset.
    """
    value = os.environ.get(LAZY_MODE_ENV, "").strip()
    return bool(value) and value != "0"


def lazy_mode_env_value() -> str:
    """The raw value of ``PT_HPU_LAZY_MODE`` (empty when unset), for messages."""
    return os.environ.get(LAZY_MODE_ENV, "")


def standin_requested() -> bool:
    """Whether ``LIGHTNING_HPU_BACKEND`` asks for the CPU stand-in (a cheap check that never raises)."""
    return os.environ.get(BACKEND_ENV, "").strip().lower() == "cpu"
