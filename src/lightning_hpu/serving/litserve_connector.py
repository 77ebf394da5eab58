"""``LitServer(api, accelerator="hpu", devices=N, workers_per_device=k)``: LitServe 0.2's connector learns the HPU.

LitServe's ``_Connector`` accepts ``auto``, ``cpu``, ``cuda``, ``mps`` and ``gpu`` only, and its ``"auto"`` looks for
``nvidia-smi`` and MPS. Patched, it takes ``"hpu"`` (and picks it for ``"auto"`` where an HPU is present), reading
``devices`` as the Trainer does (:func:`lightning_hpu.device.selection.read_devices`: a count, ``"auto"``/``-1`` for
every visible HPU, or a list of HPU indices), with the Trainer's one-sentence errors before any worker starts.
``LitServer`` then lists one ``hpu:<index>`` device per HPU, and LitServe starts ``workers_per_device`` inference
workers for each through :func:`lightning_hpu.serving.litserve_worker.inference_worker`, which binds its process to
that HPU's module before the API's ``setup(device)`` runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import litserve
from litserve import connector, server

from lightning_hpu.device.selection import read_devices
from lightning_hpu.runtime import require_backend, settings
from lightning_hpu.serving import litserve_worker
from lightning_hpu.serving.accelerator_choice import wants_hpu
from lightning_hpu.serving.patching import check_methods, wrap

#: The accelerator name LitServe's connector and devices carry for HPUs.
HPU = "hpu"


def hpu_device_indices(devices: Any) -> list[int]:
    """The HPU of each LitServe device: its index among the visible HPUs (``devices=[2, 3]`` names the third and
    fourth), checked against the HPUs this machine has; refuses, in one sentence, what the Trainer refuses."""
    selection = read_devices(devices)
    count = selection.number(len(settings.visible_modules(require_backend().device_count())))
    return list(selection.indices) if selection.indices is not None else list(range(count))


def _connector_init(original: Callable[..., None]) -> Callable[..., None]:
    def __init__(self: Any, accelerator: Any = "auto", devices: Any = "auto") -> None:
        if not wants_hpu(accelerator):
            original(self, accelerator, devices)
            return
        self._accelerator = HPU
        self._devices = hpu_device_indices(-1 if devices == "auto" else devices)

    return __init__


def _server_init(original: Callable[..., None]) -> Callable[..., None]:
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        if self._connector.accelerator == HPU:  # LitServe lists devices for cpu, cuda and mps only
            self.devices = [self.device_identifiers(HPU, index) for index in self._connector.devices]

    return __init__


def install() -> None:
    """Patch LitServe's connector and server, and start its inference workers through ours (once)."""
    version = litserve.__version__
    check_methods("LitServe", version, connector._Connector, ("__init__",))
    check_methods("LitServe", version, server.LitServer, ("__init__", "device_identifiers"))
    check_methods("LitServe", version, server, ("inference_worker",))
    wrap(connector._Connector, "__init__", _connector_init)
    wrap(server.LitServer, "__init__", _server_init)
    server.inference_worker = litserve_worker.inference_worker  # the name LitServer's worker launches call
