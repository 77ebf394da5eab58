"""The ``devices`` argument for HPUs, read once per Trainer or Fabric, with errors that name the argument and the
fix, and the binding of each process to the HPU that a list such as ``devices=[2, 3]`` gives it.

A list names HPUs by their position among the visible modules (``HABANA_VISIBLE_MODULES``, or all of them).
Each process drives one HPU, chosen by the bridge from ``HLS_MODULE_ID`` when it opens the device. The connector reads
``devices`` once into an :class:`HPUSelection` (:func:`read_devices`) and hands that object, not the value, to
Lightning's connector: ``HPUAccelerator.parse_devices`` checks it against the visible HPUs, ``get_parallel_devices``
gives one device per process from its count, and the accelerator built keeps it (``HPUAccelerator.selection``), where
the strategies and the collectives read it. The selection belongs to that Trainer or Fabric, and nothing is kept in
this module, so two of them in one process (or in the processes of one job) each use their own. The strategy's
process-group set-up binds each local rank through its accelerator's selection (:meth:`HPUSelection.bind`) before the
bridge opens the HPU; a Ray worker binds to the HPU Ray assigned it. Either way the one rule of a process and its HPU
module is :func:`bind_process_to_module`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
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


@dataclass(frozen=True)
class HPUSelection:
    """The HPUs one Trainer or Fabric asked for with ``devices``: how many, and which, read once.

    ``count`` is ``None`` for every visible HPU (``"auto"``, ``-1``); ``indices`` are the positions a list names
    (``None`` for a count: the bridge then binds local rank ``r`` to the ``r``-th visible module).
    """

    devices: Any  #: the value given, as messages show it
    count: int | None
    indices: tuple[int, ...] | None = None

    def number(self, available: int | None) -> int:
        """How many HPUs (one process each), checked against the ``available`` visible ones (``None``: unknown)."""
        if self.count is None:
            if available is not None and available < 1:
                raise _invalid(self.devices, available, "no HPU is visible")
            return available if available is not None else 1
        wanted = max(self.indices) + 1 if self.indices is not None else self.count
        if available is not None and wanted > available:
            raise _too_many(self.devices, wanted, available)
        return self.count

    def resolved(self, available: int | None) -> HPUSelection:
        """This selection with its number of HPUs known (``"auto"``: every visible one), checked against the
        ``available`` visible HPUs (:meth:`number`)."""
        count = self.number(available)
        return self if count == self.count else replace(self, count=count)

    def bind(self, local_rank: int, installed: int) -> int | None:
        """Bind this process to the HPU its local rank has in the ``devices`` list; return its module id.

        The binding is the bridge's own: ``HLS_MODULE_ID``, which ``initialize_distributed_hpu`` keeps and the bridge
        reads when the process opens its HPU. Nothing happens (``None``) when ``devices`` was a count.
        ``installed`` is the number of HPUs the backend sees.
        """
        if self.indices is None:
            return None
        shown = list(self.indices)
        if not 0 <= local_rank < len(shown):
            raise HPUConfigurationError(
                f"`devices={shown}` has no HPU for local rank {local_rank}; list one HPU per local process."
            )
        visible = settings.visible_modules(installed)
        index = shown[local_rank]
        if index >= len(visible):
            raise HPUConfigurationError(
                f"`devices={shown}` names HPU {index}, but only {len(visible)} {are(len(visible))} visible"
                f" ({settings.VISIBLE_MODULES_ENV} = {visible}); name visible HPUs, or widen"
                f" {settings.VISIBLE_MODULES_ENV}."
            )
        return bind_process_to_module(
            visible[index], f"`devices={shown}` binds local rank {local_rank}", ", or pass devices as a count"
        )


def bind_process_to_module(module: int, by: str, fix: str) -> int:
    """Bind this process to HPU ``module`` (the bridge's ``HLS_MODULE_ID``, which ``initialize_distributed_hpu``
    keeps and the bridge reads when the process opens its HPU); return ``module``.

    One process drives one HPU module: a process already bound to another one is refused, naming who asked for the
    binding (``by``) and what else to do (``fix``, after "unset HLS_MODULE_ID"). The selection's
    :meth:`HPUSelection.bind` and Ray's workers (:mod:`lightning_hpu.pytorch.ray.worker`) bind through here.
    """
    bound = settings.bound_module()
    if bound is not None and bound != module:
        raise HPUConfigurationError(
            f"{by} to HPU module {module}, but {settings.MODULE_ID_ENV}={bound} already binds this process to module"
            f" {bound}: unset {settings.MODULE_ID_ENV}{fix}."
        )
    os.environ[settings.MODULE_ID_ENV] = str(module)
    from lightning_hpu.runtime import get_backend

    backend = get_backend()
    if backend is not None:
        backend.follow_binding()
    return module


def selection_of(strategy: Any) -> HPUSelection | None:
    """The selection of ``strategy``'s accelerator (``None`` for an accelerator no connector gave ``devices``)."""
    selection = getattr(getattr(strategy, "accelerator", None), "selection", None)
    return selection if isinstance(selection, HPUSelection) else None


def _visible_count() -> int | None:
    """The number of visible (or emulated) HPUs for messages, or ``None`` if there is no backend to ask."""
    from lightning_hpu.runtime import get_backend

    try:
        backend = get_backend()
        return backend.device_count() if backend is not None and backend.is_available() else None
    except Exception:  # a message detail must never hide the error it belongs to
        return None


def read_devices(devices: Any) -> HPUSelection:
    """Read ``devices`` (an int, ``-1``, ``"auto"``, a string such as ``"2"`` or ``"0,1"``, or a list of HPU indices)
    into an :class:`HPUSelection`, refusing what can never name HPUs (0, negative counts, floats, empty lists) before
    anything starts; :meth:`HPUSelection.number` then checks it against the visible HPUs. A selection is returned as it
    is: it was read already."""
    if isinstance(devices, HPUSelection):
        return devices
    try:
        return _parse(devices, count=None)
    except ValueError:
        pass
    # Only now ask the backend how many HPUs there are, for the message: valid values start nothing early. Raised
    # outside the handler, so the user sees one error, not the same one twice as a chained traceback.
    return _parse(devices, count=_visible_count())


def _parse(devices: Any, count: int | None) -> HPUSelection:
    """:func:`read_devices`, with ``count`` the number of visible HPUs that error messages give."""
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
            return HPUSelection(devices, None)
        if value < 1:
            raise _invalid(devices, count)
        return HPUSelection(devices, value)
    indices = list(value)
    if not indices or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in indices):
        raise _invalid(devices, count, "a list must hold HPU indices, 0 or more")
    if len(set(indices)) != len(indices):
        raise _invalid(devices, count, "the list repeats an index")
    return HPUSelection(devices, len(indices), tuple(indices))


def single_process_device(device: Any = None) -> torch.device:
    """The device a one-HPU strategy (Trainer or Fabric) runs on: ``device``, or the backend's unindexed HPU, which
    the bridge binds to this process's module."""
    import torch  # here: the device rules above are read before torch is imported

    from lightning_hpu.runtime import require_backend

    return torch.device(device) if device is not None else torch.device(require_backend().torch_device().type)
