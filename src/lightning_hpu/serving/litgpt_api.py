"""LitGPT's Python API on the HPU: ``LLM.load(...)`` and ``llm.distribute(accelerator="hpu")`` (or ``"auto"`` on a
Gaudi node), which ``litgpt serve`` calls in each LitServe worker.

LitGPT 0.5's ``distribute`` accepts ``cpu``, ``gpu``, ``cuda``, ``mps`` and ``auto`` only, and its ``"auto"`` (like
``LLM.load``'s default) means CUDA, MPS or the CPU. Patched, both run LitGPT's own code with its Fabric built for the
HPU: one HPU per process (LitGPT spreads a model over several devices only with its CUDA-only ``generate_strategy``
values, which stay LitGPT's to refuse), so ``devices`` is ``1``, ``"auto"`` or a one-HPU list; anything more is
refused in one sentence before anything loads. Generation (``generate``, streaming) then runs where the model is.
"""

from __future__ import annotations

import importlib.metadata
import inspect
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from litgpt import api  # the module itself: litgpt may still be running its __init__

from lightning_hpu.runtime import HPUConfigurationError, require_backend
from lightning_hpu.serving.accelerator_choice import wants_hpu
from lightning_hpu.serving.patching import ServingIntegrationError, check_methods, wrap

#: The name ``litgpt.api`` imports Lightning under (``import lightning as L``).
LIGHTNING_NAME = "L"

_swap = threading.Lock()


class _LightningOnHPU:
    """Lightning as ``litgpt.api`` sees it during one call: the same module, whose ``Fabric`` runs on the HPU."""

    def __init__(self, lightning: ModuleType) -> None:
        self._lightning = lightning

    def __getattr__(self, name: str) -> Any:
        return getattr(self._lightning, name)

    def Fabric(self, *args: Any, **kwargs: Any) -> Any:
        return self._lightning.Fabric(*args, **{**kwargs, "accelerator": "hpu"})


@contextmanager
def fabric_on_hpu() -> Iterator[None]:
    """Inside the block, the Fabric LitGPT's API builds runs on the HPU; after it, ``litgpt.api`` is as it was."""
    require_backend()  # no HPU: one sentence saying how to get one, before LitGPT loads anything
    with _swap:
        lightning = getattr(api, LIGHTNING_NAME)
        setattr(api, LIGHTNING_NAME, _LightningOnHPU(lightning))
        try:
            yield
        finally:
            setattr(api, LIGHTNING_NAME, lightning)


def one_hpu(devices: Any) -> int:
    """The number of HPUs ``distribute`` may use: one, or a sentence saying why not."""
    if devices in ("auto", 1, -1) or (isinstance(devices, (list, tuple)) and len(devices) == 1):
        return 1
    raise HPUConfigurationError(
        f"`llm.distribute(accelerator='hpu', devices={devices!r})`: LitGPT runs a model on one HPU per process"
        " (its multi-device `generate_strategy` values are for CUDA only); use devices=1, and serve on several HPUs"
        " with LitServe's workers (`LitServer(..., accelerator='hpu', devices=N)`)."
    )


def _distribute(original: Callable[..., Any]) -> Callable[..., Any]:
    def distribute(self: Any, accelerator: Any = "auto", devices: Any = "auto", *args: Any, **kwargs: Any) -> Any:
        if not wants_hpu(accelerator):
            return original(self, accelerator, devices, *args, **kwargs)
        if kwargs.get("generate_strategy") is None:
            devices = one_hpu(devices)
        with fabric_on_hpu():  # LitGPT's code for one CPU process, its Fabric on the HPU
            return original(self, "cpu", devices, *args, **kwargs)

    return distribute


def _load(original: Callable[..., Any]) -> Callable[..., Any]:
    signature = inspect.signature(original)

    def load(cls: Any, *args: Any, **kwargs: Any) -> Any:
        distribute = signature.bind(cls, *args, **kwargs).arguments.get("distribute", "auto")
        if distribute != "auto" or not wants_hpu("auto"):
            return original(cls, *args, **kwargs)
        with fabric_on_hpu():  # LitGPT's "auto" means CUDA, MPS or else the CPU: here, the HPU
            return original(cls, *args, **kwargs)

    return load


def install() -> None:
    """Patch ``LLM.distribute`` and ``LLM.load`` (once)."""
    version = importlib.metadata.version("litgpt")
    check_methods("LitGPT", version, api.LLM, ("distribute", "load"))
    if not isinstance(getattr(api, LIGHTNING_NAME, None), ModuleType):
        raise ServingIntegrationError(
            f"lightning-hpu cannot run LitGPT {version}'s API on HPUs: litgpt.api no longer imports Lightning as"
            f" {LIGHTNING_NAME}; install the LitGPT release lightning-hpu names in its `litgpt` extra."
        )
    wrap(api.LLM, "distribute", _distribute)
    wrap(api.LLM, "load", _load)
