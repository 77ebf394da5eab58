"""DeepSpeed's accelerator on the CPU stand-in: its host ops, driving the stand-in's ``hpu`` device.

On a Gaudi, DeepSpeed's HPU accelerator calls the bridge's device kernels (``torch.ops.hpu...``), which the stand-in
does not have. Its CPU accelerator has the host kernels the stand-in needs (ZeRO's CPU Adam, no device-only ops),
but it puts every model and buffer on ``"cpu"``. :func:`install` gives DeepSpeed that CPU accelerator under the
HPU's name: the engine's device, the tensors it creates and the memory it reports are the stand-in's ``hpu``
device, its collectives go through the ``"hccl"`` process group, and everything else is the CPU accelerator's.
The stand-in's import hook calls :func:`choose_on_first_use` once DeepSpeed's accelerator module has loaded, so a
program that uses DeepSpeed on the stand-in with ``DS_ACCELERATOR=hpu`` (or unset: DeepSpeed would detect the HPU)
gets it, as a Gaudi program gets DeepSpeed's HPU accelerator.
"""

from __future__ import annotations

import functools
import os
from types import ModuleType
from typing import Any

import torch

from gaudi_standin.bridge.habana_frameworks.torch import hpu

__all__ = ["choose_on_first_use", "install"]

#: DeepSpeed's builder of the CPU's shared-memory all-reduce, which its HPU accelerator does not have.
_SHM_COMM_BUILDER = "ShareMemCommBuilder"


def _accelerator_class() -> type:
    from deepspeed.accelerator.cpu_accelerator import CPU_Accelerator

    class StandInHPUAccelerator(CPU_Accelerator):
        """The CPU accelerator, addressing the stand-in's ``hpu`` device (the process's bound HPU)."""

        def __init__(self) -> None:
            super().__init__()
            self._name = "hpu"
            self._communication_backend_name = "hccl"

        def create_op_builder(self, class_name: str) -> Any:
            # No shared-memory all-reduce (the CPU accelerator's, which DeepSpeed's HPU accelerator lacks): every
            # collective goes through the ``hccl`` stand-in group and obeys HCCL's rules.
            if class_name == _SHM_COMM_BUILDER:
                return None
            return super().create_op_builder(class_name)

        def device_name(self, device_index: int | None = None) -> str:
            # As DeepSpeed's HPU accelerator: the index is ignored, the process's HPU is meant.
            return "hpu"

        def device(self, device_index: int | None = None) -> torch.device:
            return torch.device("hpu", hpu.current_device())

        def current_device(self) -> int:
            return int(hpu.current_device())

        def current_device_name(self) -> str:
            return f"hpu:{hpu.current_device()}"

        def device_count(self) -> int:
            return int(hpu.device_count())

        def memory_allocated(self, device_index: int | None = None) -> int:
            return int(hpu.memory_allocated())

        def max_memory_allocated(self, device_index: int | None = None) -> int:
            return int(hpu.max_memory_allocated())

        def reset_max_memory_allocated(self, device_index: int | None = None) -> None:
            hpu.reset_peak_memory_stats()

        def memory_stats(self, device_index: int | None = None) -> dict[str, int]:
            return dict(hpu.memory_stats())

        def reset_peak_memory_stats(self, device_index: int | None = None) -> None:
            hpu.reset_peak_memory_stats()

        def total_memory(self, device_index: int | None = None) -> int:
            return int(hpu.mem_get_info()[1])

        def available_memory(self, device_index: int | None = None) -> int:
            return int(hpu.mem_get_info()[0])

        def on_accelerator(self, tensor: torch.Tensor) -> bool:
            return tensor.device.type == "hpu"

        def _factory(self, dtype: torch.dtype) -> Any:
            return functools.partial(torch.tensor, dtype=dtype, device="hpu")

        @property
        def BFloat16Tensor(self) -> Any:
            return self._factory(torch.bfloat16)

        @property
        def ByteTensor(self) -> Any:
            return self._factory(torch.uint8)

        @property
        def DoubleTensor(self) -> Any:
            return self._factory(torch.double)

        @property
        def FloatTensor(self) -> Any:
            return self._factory(torch.float)

        @property
        def HalfTensor(self) -> Any:
            return self._factory(torch.half)

        @property
        def IntTensor(self) -> Any:
            return self._factory(torch.int)

        @property
        def LongTensor(self) -> Any:
            return self._factory(torch.long)

        def get_compile_backend(self) -> str:
            return "hpu_backend"

        def is_fp16_supported(self) -> bool:
            # As DeepSpeed's HPU accelerator: the device generation decides (Gaudi2 and later), not the host CPU.
            from gaudi_standin.emulator import machine

            return machine.current().supports_fp16()

        def supported_dtypes(self) -> list[torch.dtype]:
            return [torch.float, torch.bfloat16, *([torch.half] if self.is_fp16_supported() else [])]

    return StandInHPUAccelerator


def install() -> Any:
    """Make DeepSpeed use the stand-in's accelerator in this process (once); returns it."""
    from deepspeed.accelerator import real_accelerator

    current = real_accelerator.ds_accelerator
    if current is not None and current._name == "hpu":
        return current
    accelerator = _accelerator_class()()
    real_accelerator.set_accelerator(accelerator)
    return accelerator


def choose_on_first_use(real_accelerator: ModuleType) -> None:
    """Wrap DeepSpeed's ``get_accelerator`` so that its first call with ``DS_ACCELERATOR`` unset or ``hpu`` installs the
    stand-in's accelerator (the module's later importers, ``deepspeed.accelerator`` itself included, get the wrapped
    one). Another ``DS_ACCELERATOR`` keeps DeepSpeed's own choice."""
    original: Any = getattr(real_accelerator, "get_accelerator")  # noqa: B009 (a module attribute mypy cannot see)

    @functools.wraps(original)
    def get_accelerator() -> Any:
        if real_accelerator.ds_accelerator is None and os.environ.get("DS_ACCELERATOR", "") in ("", "hpu"):
            install()
        return original()

    setattr(real_accelerator, "get_accelerator", get_accelerator)  # noqa: B010 (as above)
