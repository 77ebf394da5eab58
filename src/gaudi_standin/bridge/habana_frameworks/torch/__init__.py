"""``habana_frameworks.torch`` on the stand-in: importing it makes the ``hpu`` device real, as the bridge does.

Tensors go to the stand-in's ``hpu`` device from now on (``torch.hpu`` is this emulation's ``hpu`` module), the
bridge's custom ops are defined (``torch.ops.hpu``), and ``core``, ``hpu`` and ``distributed.hccl`` are imported with
it, like the bridge's ``__init__`` (the last registers the ``"hccl"`` process-group backend). ``torch.compile`` knows
``backend="hpu_backend"`` as soon as TorchDynamo's backend registry loads (the import hook registers it then,
:mod:`gaudi_standin.startup.import_hook`), with or without this package.
"""

from __future__ import annotations

from gaudi_standin import device

device.enable()

# The bridge's custom ops (``torch.ops.hpu``), defined when it loads.
from gaudi_standin.ops import attention, fp8, int4, lamb, moe, rope  # noqa: E402

CUSTOM_OP_FAMILIES = (attention, fp8, int4, lamb, moe, rope)

from gaudi_standin.bridge.habana_frameworks.torch import core, hpu  # noqa: E402, F401 (as the bridge's __init__)
from gaudi_standin.bridge.habana_frameworks.torch.distributed import hccl  # noqa: E402, F401 (registers "hccl")
