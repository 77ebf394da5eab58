"""The CPU stand-in: the HPU seam implemented on the CPU, for tests and laptops without a Gaudi.

It is chosen only explicitly (``LIGHTNING_HPU_BACKEND=cpu``). It runs every op eagerly on the CPU, but keeps
the device's rules: ``mark_step`` is counted (and is a no-op in eager mode, as on the bridge), memory stats have
the bridge's keys, fp16/fp8 follow the emulated generation, and the ``hccl`` process group refuses the reduce
ops HCCL refuses.
"""

from __future__ import annotations

import os
import resource
import sys
from dataclasses import dataclass

import torch

from lightning_hpu.runtime import settings
from lightning_hpu.runtime.base import MEMORY_STAT_KEYS, HPUBackend

#: Device memory (HBM) of each generation, used as the stand-in's ``Limit``.
_HBM_BYTES = {"GAUDI": 32 * 2**30, "GAUDI2": 96 * 2**30, "GAUDI3": 128 * 2**30}


@dataclass
class StandInCounters:
    """What the stand-in observed, so tests can check that the package drove the device as it should."""

    mark_steps: int = 0
    synchronizes: int = 0

    def reset(self) -> None:
        self.mark_steps = 0
        self.synchronizes = 0


def _resident_bytes() -> int:
    """Resident memory of this process, the stand-in's measure of memory in use."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


class CPUStandInBackend(HPUBackend):
    """Emulates ``LIGHTNING_HPU_CPU_DEVICES`` Gaudis of generation ``LIGHTNING_HPU_CPU_DEVICE_NAME`` on the CPU."""

    name = "cpu"

    def __init__(self) -> None:
        self._device_count = settings.cpu_device_count()
        self._device_name = settings.cpu_device_name()
        # Read once, like the bridge's cached ``is_lazy``.
        self._lazy = settings.lazy_mode_from_env()
        self._local_rank = 0
        self._peak_in_use = 0
        self.counters = StandInCounters()

    def is_available(self) -> bool:
        return True

    def device_count(self) -> int:
        return self._device_count

    def device_name(self) -> str:
        return self._device_name

    def torch_device(self) -> torch.device:
        return torch.device("cpu")

    def set_device(self, local_rank: int) -> None:
        if not 0 <= local_rank < self._device_count:
            raise ValueError(
                f"Local rank {local_rank} has no emulated HPU: only {self._device_count} are set up;"
                f" raise {settings.CPU_DEVICES_ENV}."
            )
        self._local_rank = local_rank

    def is_lazy(self) -> bool:
        return self._lazy

    def mark_step(self) -> None:
        if self._lazy:
            self.counters.mark_steps += 1

    def synchronize(self) -> None:
        self.counters.synchronizes += 1
        if self._lazy:
            # On the bridge, synchronize in lazy mode also triggers a step marker.
            self.counters.mark_steps += 1

    def memory_stats(self) -> dict[str, int]:
        in_use = _resident_bytes()
        self._peak_in_use = max(self._peak_in_use, in_use)
        stats = dict.fromkeys(MEMORY_STAT_KEYS, 0)
        stats.update(Limit=_HBM_BYTES[self._device_name], InUse=in_use, MaxInUse=self._peak_in_use)
        return stats

    def reset_peak_memory_stats(self) -> None:
        self._peak_in_use = _resident_bytes()

    @property
    def autocast_device_type(self) -> str:
        return "cpu"

    @property
    def process_group_backend(self) -> str:
        return "hccl"

    @property
    def deepspeed_accelerator(self) -> str:
        # DeepSpeed's CPU accelerator: its ops run on the host, like every op of the stand-in.
        return "cpu"

    def initialize_distributed(self, world_size: int, rank: int, local_rank: int) -> None:
        from lightning_hpu.runtime.cpu_process_group import register_hccl_standin_backend

        register_hccl_standin_backend()
        self.set_device(local_rank)
