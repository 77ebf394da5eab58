"""The HPU accelerator for the Lightning Trainer."""

from __future__ import annotations

from typing import Any

from lightning.fabric.utilities.types import _DEVICE
from lightning.pytorch.accelerators.accelerator import Accelerator
from typing_extensions import override

from lightning_hpu.device.accelerator import HPUAccelerator as FabricHPUAccelerator
from lightning_hpu.runtime import require_backend


class HPUAccelerator(Accelerator, FabricHPUAccelerator):
    """Intel Gaudi (HPU) accelerator: ``Trainer(accelerator=HPUAccelerator())`` or ``accelerator="hpu"``."""

    @override
    def get_device_stats(self, device: _DEVICE) -> dict[str, Any]:
        """Device memory statistics with the bridge's keys (``Limit``, ``InUse``, ``MaxInUse``, ...)."""
        return dict(require_backend().memory_stats())
