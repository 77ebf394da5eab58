"""The Trainer's ``HPUAccelerator``: Lightning's ``Accelerator`` over Fabric's HPU accelerator, whose device statistics
are the bridge's memory figures under the bridge's keys."""

from __future__ import annotations

from typing import Any

from lightning.pytorch.accelerators import Accelerator

from lightning_hpu.device.accelerator import HPUAccelerator as FabricHPUAccelerator
from lightning_hpu.pytorch.accelerator import HPUAccelerator


def test_the_trainers_accelerator_reports_the_bridges_memory_figures(standin: Any) -> None:
    assert issubclass(HPUAccelerator, Accelerator) and issubclass(HPUAccelerator, FabricHPUAccelerator)
    stats = HPUAccelerator().get_device_stats("hpu")
    assert {"Limit", "InUse", "MaxInUse"} <= set(stats)
    assert stats["Limit"] == standin.memory_stats()["Limit"]
