"""``habana_frameworks.torch`` on the stand-in: importing it switches the emulation on, as importing the bridge does.

``"hpu"`` tensors land on the CPU from now on, and HPU autocast regions lower them. The import hook then imports
``core``, ``hpu`` and ``distributed.hccl`` with it, like the bridge's ``__init__``.
"""

from __future__ import annotations

from lightning_hpu.runtime.standin.emulation import autocast, device_mode

device_mode.activate()
autocast.pair_hpu_autocast_with_cpu()
