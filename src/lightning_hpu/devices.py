"""Parsing the ``devices`` argument for HPUs, with errors that name the argument and the fix."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lightning_hpu.runtime import settings


def _usage(count: int) -> str:
    return (
        f"use a positive int (e.g. devices=1), -1 or 'auto' for all {count} visible HPU(s),"
        " or a list of HPU indices such as [0, 1]"
    )


def _invalid(devices: Any, count: int, why: str = "") -> ValueError:
    hint = f" ({why})" if why else ""
    return ValueError(f"`devices={devices!r}` is not valid for HPUAccelerator{hint}: {_usage(count)}.")


def _too_many(devices: Any, wanted: int, count: int) -> ValueError:
    fix = (
        f" set {settings.CPU_DEVICES_ENV}={wanted} to emulate more on the CPU stand-in"
        if settings.requested_backend() == "cpu"
        else " ask for fewer, or check HABANA_VISIBLE_MODULES"
    )
    return ValueError(f"`devices={devices!r}` asks for {wanted} HPUs but only {count} are visible:{fix}.")


def check_devices_syntax(devices: Any) -> None:
    """Reject values that can never name HPUs (0, negative counts, floats, empty lists) before anything starts."""
    parse_hpu_devices(devices, available=None)


def parse_hpu_devices(devices: Any, available: int | None) -> int:
    """Turn ``devices`` into a number of HPUs, one process each.

    ``available`` is the number of visible HPUs; ``None`` checks only the form of the value.
    """
    count = available if available is not None else 0
    value: Any = devices
    if isinstance(value, str):
        text = value.strip().lower()
        if text == "auto":
            value = -1
        elif "," in text:
            try:
                value = [int(part) for part in text.split(",") if part.strip()]
            except ValueError:
                raise _invalid(devices, count) from None
        else:
            try:
                value = int(text)
            except ValueError:
                raise _invalid(devices, count) from None
    if isinstance(value, bool) or not isinstance(value, (int, Sequence)) or isinstance(value, str):
        raise _invalid(devices, count, f"got a {type(devices).__name__}")
    if isinstance(value, int):
        if value == -1:
            if available is not None and available < 1:
                raise _invalid(devices, count, "no HPU is visible")
            return available if available is not None else 1
        if value < 1:
            raise _invalid(devices, count)
        if available is not None and value > available:
            raise _too_many(devices, value, available)
        return value
    indices = list(value)
    if not indices or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in indices):
        raise _invalid(devices, count, "a list must hold HPU indices, 0 or more")
    if len(set(indices)) != len(indices):
        raise _invalid(devices, count, "the list repeats an index")
    if available is not None and max(indices) >= available:
        raise _too_many(devices, max(indices) + 1, available)
    return len(indices)
