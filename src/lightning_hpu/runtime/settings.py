"""The environment variables that choose and shape the runtime backend, validated in one place."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import lightning_hpu_module_ids
from lightning_hpu.runtime.base import HPUConfigurationError
from lightning_hpu_module_ids import MODULE_ID_ENV as MODULE_ID_ENV  # re-exported: other modules read them from here
from lightning_hpu_module_ids import VISIBLE_MODULES_ENV as VISIBLE_MODULES_ENV

BACKEND_ENV = "LIGHTNING_HPU_BACKEND"
#: The CPU stand-in's settings (read by the stand-in; named in messages and the env report).
CPU_DEVICES_ENV = "LIGHTNING_HPU_CPU_DEVICES"
CPU_DEVICE_NAME_ENV = "LIGHTNING_HPU_CPU_DEVICE_NAME"
LAZY_MODE_ENV = "PT_HPU_LAZY_MODE"
#: Set by a process that starts ranks with Lightning's launcher: its pid, which those ranks follow (the rank
#: watchdog of :mod:`lightning_hpu.distributed.rank_watchdog`).
LAUNCHER_PID_ENV = "LIGHTNING_HPU_LAUNCHER_PID"
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


@contextlib.contextmanager
def variable_set(name: str, value: str) -> Iterator[None]:
    """``name=value`` in ``os.environ`` inside the block only (for a library that reads it once, or for the processes
    started inside), then as it was: nothing the package sets for a moment is left behind."""
    previous = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = previous


def launcher_pid() -> int | None:
    """The pid in ``LIGHTNING_HPU_LAUNCHER_PID`` (``None`` when unset), set for the ranks a launcher starts."""
    value = os.environ.get(LAUNCHER_PID_ENV, "").strip()
    if not value:
        return None
    if not value.isdigit() or int(value) == 0:
        raise HPUConfigurationError(
            f"{LAUNCHER_PID_ENV}={os.environ[LAUNCHER_PID_ENV]!r} is not a process id: lightning-hpu sets it, to the"
            " launching process's pid, for the ranks it starts; unset it."
        )
    return int(value)


def lazy_mode_from_env() -> bool:
    """Lazy mode as current Gaudi software reads it: eager unless ``PT_HPU_LAZY_MODE`` is set to anything but ``0``.

    Intel Gaudi software after 1.19 runs eager by default and calls lazy mode legacy; ``PT_HPU_LAZY_MODE=1``
    selects it. An empty value counts as unset.
    """
    value = os.environ.get(LAZY_MODE_ENV, "").strip()
    return bool(value) and value != "0"


def visible_modules(installed: int) -> list[int]:
    """The module ids this job may use (:func:`lightning_hpu_module_ids.visible_modules`, shared with the stand-in)."""
    return lightning_hpu_module_ids.visible_modules(installed, HPUConfigurationError)


def bound_module() -> int | None:
    """The module ``HLS_MODULE_ID`` binds this process to, or ``None`` when it is unset."""
    return lightning_hpu_module_ids.bound_module(HPUConfigurationError)


def lazy_mode_env_value() -> str:
    """The raw value of ``PT_HPU_LAZY_MODE`` (empty when unset), for messages."""
    return os.environ.get(LAZY_MODE_ENV, "")


def standin_requested() -> bool:
    """Whether ``LIGHTNING_HPU_BACKEND`` asks for the CPU stand-in (a cheap check that never raises)."""
    return os.environ.get(BACKEND_ENV, "").strip().lower() == "cpu"
