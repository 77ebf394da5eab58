"""``habana_frameworks.torch.utils.experimental`` on the stand-in: device queries and the dynamicity tools.

As in the bridge's public source (1.19):

- ``synDeviceType`` and ``_get_device_type()``: the emulated generation (``LIGHTNING_HPU_CPU_DEVICE_NAME``);
  ``_is_fp16_supported()`` is false on a first-generation Gaudi only;
- ``_is_available()``; ``_data_ptr(tensor)``: where a device tensor's data starts (the stand-in's device memory is
  host memory), 0 for an empty tensor or one off the device;
- ``_compute_stream()`` and ``_set_profiler_tracer_memory()``: 0, as the bridge answers when it has no device
  handle to give (the stand-in runs each op on the host thread, with no stream or profiler buffer);
- ``_record_param(s)``: feed the bridge's memory profiler with tensor names; recorded in :data:`RECORDED_PARAMS`;
- ``_reset_device_memory()``: warns (the bridge keeps it for tests) and resets the peak memory statistics;
- ``data_dynamicity``, ``const_shape_dataloader``, ``detect_recompilation_auto_model``: from the submodule
  ``detect_recompilation`` (:mod:`.detect_recompilation`);
- ``hpu``: the ``habana_frameworks.torch.hpu`` module, which the bridge's package imports under that name
  (optimum-habana calls ``htexp.hpu.is_available()`` and ``htexp.hpu.device_count()``).
"""

from __future__ import annotations

import enum
import warnings
from typing import Any

import torch

from gaudi_standin.bridge.habana_frameworks.torch import hpu
from gaudi_standin.bridge.habana_frameworks.torch.utils.experimental import detect_recompilation
from gaudi_standin.bridge.habana_frameworks.torch.utils.experimental.detect_recompilation import (
    const_shape_dataloader,
    data_dynamicity,
    detect_recompilation_auto_model,
)
from gaudi_standin.emulator import machine

__all__ = [
    "RECORDED_PARAMS",
    "const_shape_dataloader",
    "data_dynamicity",
    "detect_recompilation",
    "detect_recompilation_auto_model",
    "hpu",
    "synDeviceType",
]


class synDeviceType(enum.IntEnum):
    """The Synapse device types the bridge reports."""

    synDeviceGaudi = 1
    synDeviceGaudi2 = 2
    synDeviceGaudi3 = 3


#: The names ``_record_param`` was given, with ``(start, size in bytes, is_param, is_grad, is_optim_state)``.
RECORDED_PARAMS: dict[str, tuple[int, int, bool, bool, bool]] = {}


def _is_available() -> bool:
    return machine.current().is_available()


def _get_device_type() -> synDeviceType:
    return synDeviceType[f"synDevice{machine.current().device_name().capitalize()}"]


def _is_fp16_supported() -> bool:
    return _get_device_type() != synDeviceType.synDeviceGaudi


def _data_ptr(tensor: torch.Tensor) -> int:
    if tensor.device.type != "hpu" or tensor.numel() == 0:
        return 0
    return int(tensor.data_ptr())


def _compute_stream() -> int:
    return 0


def _set_profiler_tracer_memory(device_id: int) -> int:
    return 0


def _record_param(
    name: str, t_start: int, t_size: int, is_param: bool = False, is_grad: bool = False, is_optim_state: bool = False
) -> None:
    RECORDED_PARAMS[name] = (int(t_start), int(t_size), bool(is_param), bool(is_grad), bool(is_optim_state))


def _record_params(
    model: torch.nn.Module | None = None,
    optimizer: torch.optim.Optimizer | None = None,
    force_model_update: bool = False,
) -> None:
    """Record the model's parameters, gradients and buffers, and the optimizer's momentum buffers, by name."""
    if model is None:
        return
    for module_name, module in model.named_modules():
        for name, param in module.named_parameters(recurse=False):
            _record_tensor(f"{module_name}/{name}", param.data, is_param=True)
            if param.grad is not None:
                _record_tensor(f"{module_name}/{name}.grad", param.grad, is_grad=True)
            state: Any = optimizer.state.get(param, {}) if optimizer is not None else {}
            if "momentum_buffer" in state:
                _record_tensor(
                    f"{module_name}/optim/{name}/momentum_buffer", state["momentum_buffer"], is_optim_state=True
                )
        for name, buffer in module.named_buffers(recurse=False):
            _record_tensor(f"{module_name}/buffer_{name}", buffer, is_param=True)


def _record_tensor(name: str, tensor: torch.Tensor, **kind: bool) -> None:
    _record_param(name, _data_ptr(tensor), tensor.numel() * tensor.element_size(), **kind)


def _reset_device_memory() -> None:
    warnings.warn("used only to reset the memory in case of testing", stacklevel=2)
    machine.current().reset_peak_memory_stats()
