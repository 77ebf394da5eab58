"""The Gaudi backend: the only module of the package that imports ``habana_frameworks``.

Every call here is one listed in shared/reference/habana-bridge-api.md; mypy checks them against the typed stub in
``typings/habana_frameworks``. Importing this module imports the bridge, so it is imported only once a Gaudi
backend has been chosen (see :func:`lightning_hpu.runtime.get_backend`).
"""

from __future__ import annotations

from types import ModuleType

import habana_frameworks.torch.core as htcore
import habana_frameworks.torch.hpu as hthpu
import torch

from lightning_hpu.runtime.base import MEMORY_STAT_KEYS, HPUBackend


class BridgeBackend(HPUBackend):
    """Drives real Gaudis through the Intel Gaudi PyTorch bridge."""

    name = "hpu"

    def __init__(self) -> None:
        self._device_name: str | None = None

    def is_available(self) -> bool:
        return hthpu.is_available()

    def device_count(self) -> int:
        return hthpu.device_count() if hthpu.is_available() else 0

    def device_name(self) -> str:
        # ``get_device_name`` acquires the device, so it is asked once and only when needed.
        if self._device_name is None:
            self._device_name = hthpu.get_device_name()
        return self._device_name

    def torch_device(self) -> torch.device:
        # Each process drives exactly one HPU, selected by HLS_MODULE_ID; tensors use the unindexed device.
        return torch.device("hpu")

    def set_device(self, local_rank: int) -> None:
        hthpu.set_device(local_rank)

    def is_lazy(self) -> bool:
        return htcore.is_lazy()

    def mark_step(self) -> None:
        htcore.mark_step()

    def synchronize(self) -> None:
        hthpu.synchronize()

    def memory_stats(self) -> dict[str, int]:
        stats = hthpu.memory_stats()
        return {key: int(stats.get(key, 0)) for key in MEMORY_STAT_KEYS}

    def reset_peak_memory_stats(self) -> None:
        hthpu.reset_peak_memory_stats()

    def supports_fp16(self) -> bool:
        from habana_frameworks.torch.utils.experimental import _is_fp16_supported

        return _is_fp16_supported()

    @property
    def autocast_device_type(self) -> str:
        return "hpu"

    @property
    def process_group_backend(self) -> str:
        return "hccl"

    @property
    def deepspeed_accelerator(self) -> str:
        return "hpu"

    def initialize_distributed(self, world_size: int, rank: int, local_rank: int) -> None:
        from habana_frameworks.torch.distributed.hccl import initialize_distributed_hpu

        # Registers the "hccl" c10d backend and binds HLS_MODULE_ID to this local rank.
        initialize_distributed_hpu(world_size=world_size, rank=rank, local_rank=local_rank)

    @staticmethod
    def bridge_module() -> ModuleType:
        """The ``habana_frameworks.torch.hpu`` module, for the few helpers that need more of the bridge."""
        return hthpu
