"""``habana_frameworks.torch`` on the stand-in: importing it makes the ``hpu`` device real, as the bridge does.

Tensors go to the stand-in's ``hpu`` device from now on (``torch.hpu`` is this emulation's ``hpu`` module), and
``torch.compile`` knows ``backend="hpu_backend"``. The import hook then imports ``core``, ``hpu`` and
``distributed.hccl`` with it, like the bridge's ``__init__``.
"""

from __future__ import annotations

from gaudi_standin import device

device.enable()

# The bridge registers its torch.compile backend when it is imported.
from gaudi_standin.compile_backend import register_hpu_backend  # noqa: E402 (after the device is real)

register_hpu_backend()

# ... and its custom ops (``torch.ops.hpu``).
from gaudi_standin.bridge.custom_ops import attention, fp8, int4, lamb, moe, rope  # noqa: E402

CUSTOM_OP_FAMILIES = (attention, fp8, int4, lamb, moe, rope)
