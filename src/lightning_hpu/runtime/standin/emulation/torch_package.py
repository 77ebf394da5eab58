"""``habana_frameworks.torch`` on the stand-in: importing it makes the ``hpu`` device real, as the bridge does.

Tensors go to the stand-in's ``hpu`` device from now on (``torch.hpu`` is this emulation's ``hpu`` module). The import
hook then imports ``core``, ``hpu`` and ``distributed.hccl`` with it, like the bridge's ``__init__``.
"""

from __future__ import annotations

from lightning_hpu.runtime.standin import device

device.enable()
