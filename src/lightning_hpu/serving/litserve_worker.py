"""LitServe's inference worker on an HPU: one process per HPU module, as a Gaudi requires.

LitServe starts each inference worker in a process of its own (``spawn``) with the device it serves, here
``hpu:<index>`` (the HPU's index among the visible ones). :func:`inference_worker`, which the patched ``LitServer``
starts instead of LitServe's, binds the process to that HPU's module before anything opens it
(:func:`~lightning_hpu.device.selection.bind_process_to_module`, as the Trainer binds ``devices=[2, 3]``), ties the
worker to the server that started it (it gets ``SIGKILL`` when that process dies, however it dies, so no worker keeps
holding its HPU), and runs LitServe's own worker with the process's torch device, ``"hpu"`` (a process sees its one
module): ``setup(device)``, batching and streaming are LitServe's. Workers of other devices run LitServe's worker
unchanged.
"""

from __future__ import annotations

import os
from typing import Any

from lightning_hpu.device.selection import bind_process_to_module
from lightning_hpu.distributed.rank_watchdog import follow_launcher
from lightning_hpu.runtime import require_backend, settings

#: How LitServe names an HPU device: ``hpu:<index among the visible HPUs>``.
PREFIX = "hpu:"


def bind_worker(device: str) -> str:
    """Bind this process to the HPU ``device`` names (``hpu:<index>``); return the torch device its work uses."""
    backend = require_backend()
    module = settings.visible_modules(backend.device_count())[int(device[len(PREFIX) :])]  # checked by the server
    by = f"LitServe's inference worker for {device!r} binds this process"
    bind_process_to_module(module, by, " before starting the server: each LitServe worker binds its own HPU")
    return str(backend.torch_device())


def inference_worker(lit_api: Any, device: Any, *args: Any, **kwargs: Any) -> None:
    """LitServe's ``inference_worker``, bound first to the HPU of ``device`` when it names one."""
    from litserve.loops import inference_worker as litserve_inference_worker

    if isinstance(device, str) and device.startswith(PREFIX):
        follow_launcher(os.getppid())
        device = bind_worker(device)
    litserve_inference_worker(lit_api, device, *args, **kwargs)
