"""Parsing the ``devices`` argument for HPUs, with errors that name the argument and the fix, and binding each
process to the HPU that a list such as ``devices=[2, 3]`` gives it.

A list names HPUs by their position among the visible modules (``HABANA_VISIBLE_MODULES``, or all of them).
Each process drives one HPU, chosen by the bridge from ``HLS_MODULE_ID`` when it opens the device; the accelerator
remembers the list when Lightning parses ``devices`` (in every process, since each one builds its Trainer or Fabric),
and :func:`bind_selected_hpu` writes the module of the process's local rank there before the bridge opens it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lightning_hpu.runtime import HPUConfigurationError, settings
from lightning_hpu.support.wording import are, counted

if TYPE_CHECKING:
    import torch


def _usage(count: int | None) -> str:
    every = "every visible HPU" if count is None else f"all {counted(count, 'visible HPU')}"
    return f"use a positive int (e.g. devices=1), -1 or 'auto' for {every}, or a list of HPU indices such as [0, 1]"


def _invalid(devices: Any, count: int | None, why: str = "") -> HPUConfigurationError:
    hint = f" ({why})" if why else ""
    return HPUConfigurationError(f"`devices={devices!r}` is not valid for HPUAccelerator{hint}: {_usage(count)}.")


def _too_many(devices: Any, wanted: int, count: int) -> HPUConfigurationError:
    fix = (
        f" set {settings.CPU_DEVICES_ENV}={wanted} to emulate more on the CPU stand-in"
        if settings.requested_backend() == "cpu"
        else " ask for fewer, or check HABANA_VISIBLE_MODULES"
    )
    return HPUConfigurationError(
        f"`devices={devices!r}` asks for {counted(wanted, 'HPU')} but only {count} {are(count)} visible:{fix}."
    )


_selected_indices: tuple[int, ...] | None = None


def _as_index_list(devices: Any) -> list[int] | None:
    """The HPU indices that ``devices`` lists (``[2, 3]`` or ``"2,3"``), or ``None`` when it is a count."""
    if isinstance(devices, str):
        text = devices.strip()
        return [int(part) for part in text.split(",") if part.strip()] if "," in text else None
    if isinstance(devices, Sequence):
        return [int(index) for index in devices]
    return None


def remember_device_indices(devices: Any) -> None:
    """Remember which HPUs a valid ``devices`` value names, for :func:`bind_selected_hpu` (a count names none)."""
    global _selected_indices
    indices = _as_index_list(devices)
    _selected_indices = None if indices is None else tuple(indices)


def selected_device_indices() -> tuple[int, ...] | None:
    """The HPU indices of the last ``devices`` list parsed in this process, or ``None`` after a count."""
    return _selected_indices


def selected_modules(count: int, installed: int) -> list[int]:
    """The HPU module of each local rank: the remembered ``devices`` list's, else the first ``count`` visible ones."""
    visible = settings.visible_modules(installed)
    positions = list(_selected_indices) if _selected_indices is not None else list(range(count))
    return [visible[position] for position in positions if position < len(visible)]


def bind_selected_hpu(local_rank: int, installed: int) -> int | None:
    """Bind this process to the HPU its local rank has in the remembered ``devices`` list; return its module id.

    The binding is the bridge's own: ``HLS_MODULE_ID``, which ``initialize_distributed_hpu`` keeps and the bridge
    reads when the process opens its HPU. Nothing happens (``None``) when ``devices`` was a count: the bridge then
    binds local rank ``r`` to the ``r``-th visible module. ``installed`` is the number of HPUs the backend sees.
    """
    indices = _selected_indices
    if indices is None:
        return None
    shown = list(indices)
    if not 0 <= local_rank < len(indices):
        raise HPUConfigurationError(
            f"`devices={shown}` has no HPU for local rank {local_rank}; list one HPU per local process."
        )
    visible = settings.visible_modules(installed)
    index = indices[local_rank]
    if index >= len(visible):
        raise HPUConfigurationError(
            f"`devices={shown}` names HPU {index}, but only {len(visible)} {are(len(visible))} visible"
            f" ({settings.VISIBLE_MODULES_ENV} = {visible}); name visible HPUs, or widen"
            f" {settings.VISIBLE_MODULES_ENV}."
        )
    module = visible[index]
    bound = settings.bound_module()
    if bound is not None and bound != module:
        raise HPUConfigurationError(
            f"`devices={shown}` binds local rank {local_rank} to HPU module {module}, but"
            f" {settings.MODULE_ID_ENV}={bound} already binds this process to module {bound}; unset"
            f" {settings.MODULE_ID_ENV}, or pass devices as a count."
        )
    os.environ[settings.MODULE_ID_ENV] = str(module)
    from lightning_hpu.runtime import get_backend

    backend = get_backend()
    if backend is not None:
        backend.follow_binding()
    return module


def _visible_count() -> int | None:
    """The number of visible (or emulated) HPUs for messages, or ``None`` if there is no backend to ask."""
    from lightning_hpu.runtime import get_backend

    try:
        backend = get_backend()
        return backend.device_count() if backend is not None and backend.is_available() else None
    except Exception:  # a message detail must never hide the error it belongs to
        return None


def check_devices_syntax(devices: Any) -> None:
    """Reject values that can never name HPUs (0, negative counts, floats, empty lists) before anything starts."""
    try:
        _parse(devices, available=None, count=None)
        return
    except ValueError:
        pass
    # Only now ask the backend how many HPUs there are, for the message: valid values start nothing early. Raised
    # outside the handler, so the user sees one error, not the same one twice as a chained traceback.
    _parse(devices, available=None, count=_visible_count())


def parse_hpu_devices(devices: Any, available: int | None) -> int:
    """Turn ``devices`` into a number of HPUs, one process each.

    ``available`` is the number of visible HPUs; ``None`` checks only the form of the value.
    """
    return _parse(devices, available, count=available)


def _parse(devices: Any, available: int | None, count: int | None) -> int:
    """:func:`parse_hpu_devices`, with ``count`` the number of visible HPUs that error messages give."""
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


def single_process_device(device: Any = None) -> torch.device:
    """The device a one-HPU strategy (Trainer or Fabric) runs on: ``device``, or the backend's unindexed HPU, which
    the bridge binds to this process's module."""
    import torch  # here: the device rules above are read before torch is imported

    from lightning_hpu.runtime import require_backend

    return torch.device(device) if device is not None else torch.device(require_backend().torch_device().type)
