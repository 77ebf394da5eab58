"""``habana_frameworks.torch.core.quantization`` on the stand-in: the inference set-up and graph-constant marking.

On a Gaudi, ``hpu_set_inference_env(model)`` switches the bridge to inference mode (and fuses conv+bn in the model
it is given) before ``.to("hpu")``; ``hpu_inference_initialize(model)`` then marks, in lazy mode, the tensors of
``model.state_dict()`` as graph constants (``_mark_params_as_const``: each gets a constant id, so the graph compiler
folds it into its recipes' constant sections), which Intel Neural Compressor's fp8 flow also calls. The stand-in has
no graph compiler: the model is kept as it is and computes as before, and marking records the ids only (per tensor,
for as long as the tensor lives), so ``_get_marked_const_count()`` and a second marking behave as on the bridge.
"""

from __future__ import annotations

import weakref
from typing import Any

import torch

from gaudi_standin.emulator import machine

__all__ = [
    "hpu_inference_initialize",
    "hpu_initialize",
    "hpu_reset_env",
    "hpu_set_env",
    "hpu_set_inference_env",
    "hpu_teardown_inference_env",
]

#: The constant id of each live marked tensor, by ``id(tensor)`` (the bridge keeps it in the tensor's extra metadata).
_const_ids: dict[int, int] = {}
_const_id = -1


def _remember(tensor: torch.Tensor, const_id: int) -> None:
    key = id(tensor)
    _const_ids[key] = const_id
    weakref.finalize(tensor, _const_ids.pop, key, None)


def _state_tensors(model: torch.nn.Module, only_scales: bool) -> list[tuple[str, torch.Tensor]]:
    """The tensors of ``model.state_dict()`` (the parameters and buffers themselves), or those named ``*scale*``."""
    return [
        (name, tensor)
        for name, tensor in model.state_dict(keep_vars=True).items()
        if isinstance(tensor, torch.Tensor) and (not only_scales or "scale" in name)
    ]


def _mark_params_as_const(
    model: torch.nn.Module | None = None, only_scales: bool = False, console_prints: bool = False
) -> None:
    """Give each tensor of the model's state a constant id (a tensor already marked keeps its own)."""
    global _const_id
    if model is None:
        return
    for name, tensor in _state_tensors(model, only_scales):
        if id(tensor) in _const_ids:
            if console_prints:
                print(f"Metadata already exists, const_id '{_const_ids[id(tensor)]}'")
            continue
        _const_id += 1
        _remember(tensor, _const_id)
        if console_prints:
            print(f"Tensor '{name}' is_const 'True' id '{_const_id}'")


def _get_marked_const_count() -> int:
    """How many constant ids were given out in this process."""
    return _const_id + 1


def _check_params_as_const(model: torch.nn.Module | None = None, only_scales: bool = False) -> None:
    """Read back the marks of the model's state (the bridge's check reads them and returns nothing)."""
    if model is None:
        return
    for _, tensor in _state_tensors(model, only_scales):
        _const_ids.get(id(tensor))


def hpu_set_inference_env(model: torch.nn.Module | None = None) -> torch.nn.Module | None:
    """Prepare inference before ``.to("hpu")``: returns the model (the bridge returns it fused), or ``None``."""
    return model


def hpu_inference_initialize(
    model: torch.nn.Module | None = None,
    mark_only_scales_as_const: bool = False,
    optimizer: torch.optim.Optimizer | None = None,
    args: Any = None,
) -> None:
    """After ``.to("hpu")``: in lazy mode, mark the model's state as graph constants (see the module docstring)."""
    if model is not None and machine.current().is_lazy():
        _mark_params_as_const(model=model, only_scales=mark_only_scales_as_const)
        _check_params_as_const(model=model, only_scales=mark_only_scales_as_const)


def hpu_teardown_inference_env() -> None:
    """Leave inference mode."""


#: The older names of the inference set-up, which the bridge keeps as deprecated twins.
hpu_set_env = hpu_set_inference_env
hpu_initialize = hpu_inference_initialize
hpu_reset_env = hpu_teardown_inference_env
