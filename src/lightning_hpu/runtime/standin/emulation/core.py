"""``habana_frameworks.torch.core`` (``htcore``) on the stand-in: step markers and the lazy-mode switch.

As the bridge's ``core`` does, importing it registers ``habana_frameworks.torch.hpu`` as ``torch.hpu``.
"""

from __future__ import annotations

import torch

from lightning_hpu.runtime import require_backend
from lightning_hpu.runtime.standin.emulation import hpu

__all__ = ["hpu", "is_lazy", "iter_mark_step", "mark_step"]


def mark_step(device_str: str = "", sync: bool = False) -> None:
    """Flush the accumulated graph: counted by the stand-in in lazy mode, a no-op in eager mode (as on a Gaudi)."""
    require_backend().mark_step()


def iter_mark_step(device_str: str = "") -> None:
    """A step marker at the end of an iteration (the same as :func:`mark_step` on the stand-in)."""
    require_backend().mark_step()


def is_lazy() -> bool:
    """Whether the process runs the legacy lazy mode (``PT_HPU_LAZY_MODE`` set to anything but ``0``)."""
    return require_backend().is_lazy()


if not hasattr(torch, "hpu"):
    torch._register_device_module("hpu", hpu)
