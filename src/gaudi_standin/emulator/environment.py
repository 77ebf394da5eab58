"""The environment variables the stand-in reads: which devices it emulates and how the bridge is configured.

The stand-in is a bridge, so it reads what the bridge reads (``PT_HPU_LAZY_MODE``, ``HLS_MODULE_ID``,
``HABANA_VISIBLE_MODULES``) and its own switches (``LIGHTNING_HPU_CPU_DEVICES``, ``LIGHTNING_HPU_CPU_DEVICE_NAME``).
It imports nothing of lightning_hpu: a bad value is a :class:`StandInConfigurationError` naming the variable. The
module variables are parsed by :mod:`lightning_hpu_module_ids`, below the stand-in and lightning_hpu alike.
"""

from __future__ import annotations

import os
from functools import partial

import lightning_hpu_module_ids
from gaudi_standin.startup.import_hook import BACKEND_ENV
from lightning_hpu_module_ids import MODULE_ID_ENV, VISIBLE_MODULES_ENV

__all__ = [
    "BACKEND_ENV",
    "CPU_DEVICES_ENV",
    "CPU_DEVICE_NAME_ENV",
    "GAUDI_GENERATIONS",
    "LAZY_MODE_ENV",
    "MODULE_ID_ENV",
    "VISIBLE_MODULES_ENV",
    "StandInConfigurationError",
]

CPU_DEVICES_ENV = "LIGHTNING_HPU_CPU_DEVICES"
CPU_DEVICE_NAME_ENV = "LIGHTNING_HPU_CPU_DEVICE_NAME"
LAZY_MODE_ENV = "PT_HPU_LAZY_MODE"

#: Generations of Gaudi as the bridge's ``get_device_name`` reports them.
GAUDI_GENERATIONS: tuple[str, ...] = ("GAUDI", "GAUDI2", "GAUDI3")


class StandInConfigurationError(ValueError):
    """A stand-in or bridge environment variable holds a value that cannot work; the message names it and the fix."""


def cpu_device_count() -> int:
    """Emulated device count (``LIGHTNING_HPU_CPU_DEVICES``, default 1)."""
    raw = os.environ.get(CPU_DEVICES_ENV, "1").strip()
    try:
        count = int(raw)
    except ValueError:
        count = 0
    if count < 1:
        raise StandInConfigurationError(
            f"{CPU_DEVICES_ENV}={raw!r} must be a positive integer, e.g. {CPU_DEVICES_ENV}=2."
        )
    return count


def cpu_device_name() -> str:
    """Emulated Gaudi generation (``LIGHTNING_HPU_CPU_DEVICE_NAME``, default GAUDI2)."""
    raw = os.environ.get(CPU_DEVICE_NAME_ENV, "GAUDI2").strip().upper()
    if raw not in GAUDI_GENERATIONS:
        raise StandInConfigurationError(
            f"{CPU_DEVICE_NAME_ENV}={os.environ[CPU_DEVICE_NAME_ENV]!r} is not a Gaudi generation:"
            f" use one of {', '.join(GAUDI_GENERATIONS)}."
        )
    return raw


def lazy_mode_from_env() -> bool:
    """Lazy mode as current Gaudi software reads it: eager unless ``PT_HPU_LAZY_MODE`` is set to anything but ``0``."""
    value = os.environ.get(LAZY_MODE_ENV, "").strip()
    return bool(value) and value != "0"


def lazy_mode_env_value() -> str:
    """The raw value of ``PT_HPU_LAZY_MODE`` (empty when unset), for messages."""
    return os.environ.get(LAZY_MODE_ENV, "")


#: The module ids this job may use: ``HABANA_VISIBLE_MODULES``, or all ``installed`` modules when it is unset.
visible_modules = partial(lightning_hpu_module_ids.visible_modules, error=StandInConfigurationError)
#: The module ``HLS_MODULE_ID`` binds this process to, or ``None`` when it is unset.
bound_module = partial(lightning_hpu_module_ids.bound_module, error=StandInConfigurationError)
