"""``habana_frameworks.torch.core`` (``htcore``) on the stand-in: step markers, the lazy-mode switch, inference set-up.

As the bridge's ``core`` does, importing it registers ``habana_frameworks.torch.hpu`` as ``torch.hpu``.
"""

from __future__ import annotations

from typing import Any

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


# --- inference set-up (``core.quantization``): on a Gaudi they fuse conv+bn and mark weights as graph constants, for
# speed only; the stand-in keeps the model as it is.
def hpu_set_inference_env(model: torch.nn.Module | None = None) -> torch.nn.Module | None:
    """Prepare inference before ``.to("hpu")``: returns the model (the bridge returns it fused), or ``None``."""
    return model


def hpu_inference_initialize(
    model: torch.nn.Module | None = None,
    mark_only_scales_as_const: bool = False,
    optimizer: torch.optim.Optimizer | None = None,
    args: Any = None,
) -> None:
    """Mark the model's weights as constants after ``.to("hpu")`` (lazy mode on a Gaudi; nothing to do here)."""


def hpu_teardown_inference_env() -> None:
    """Leave inference mode."""


#: The older names of the inference set-up, which the bridge keeps as deprecated twins.
hpu_set_env = hpu_set_inference_env
hpu_initialize = hpu_inference_initialize
hpu_reset_env = hpu_teardown_inference_env


if not hasattr(torch, "hpu"):
    torch._register_device_module("hpu", hpu)
