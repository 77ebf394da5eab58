"""``habana_frameworks.torch.core`` (``htcore``) on the stand-in: step markers, the lazy-mode switch, inference set-up.

A package, as on the bridge: its ``quantization`` module holds the inference set-up calls, which ``core`` exposes.
As the bridge's ``core`` does, importing it registers ``habana_frameworks.torch.hpu`` as ``torch.hpu``.
"""

from __future__ import annotations

import torch

from gaudi_standin.bridge.habana_frameworks.torch import hpu
from gaudi_standin.emulator import machine

__all__ = [
    "hpu",
    "hpu_inference_initialize",
    "hpu_initialize",
    "hpu_reset_env",
    "hpu_set_env",
    "hpu_set_inference_env",
    "hpu_teardown_inference_env",
    "is_lazy",
    "iter_mark_step",
    "mark_step",
]


def mark_step(device_str: str = "", sync: bool = False) -> None:
    """Flush the accumulated graph: counted by the stand-in in lazy mode, a no-op in eager mode (as on a Gaudi)."""
    machine.current().mark_step()


def iter_mark_step(device_str: str = "") -> None:
    """A step marker at the end of an iteration (the same as :func:`mark_step` on the stand-in)."""
    machine.current().mark_step()


def is_lazy() -> bool:
    """Whether the process runs the legacy lazy mode (``PT_HPU_LAZY_MODE`` set to anything but ``0``)."""
    return machine.current().is_lazy()


# The inference set-up calls live in ``core.quantization``, as on the bridge; ``core`` exposes them.
from gaudi_standin.bridge.habana_frameworks.torch.core.quantization import (  # noqa: E402
    hpu_inference_initialize,
    hpu_initialize,
    hpu_reset_env,
    hpu_set_env,
    hpu_set_inference_env,
    hpu_teardown_inference_env,
)

if not hasattr(torch, "hpu"):
    torch._register_device_module("hpu", hpu)
