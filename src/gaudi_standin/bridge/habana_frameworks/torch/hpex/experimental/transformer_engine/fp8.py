"""``transformer_engine.fp8`` on the stand-in: ``fp8_autocast``, fp8 availability, and delayed scaling.

fp8 is emulated the way torchao's float8 training tests without fp8 hardware: a tensor is multiplied by its scale,
saturated to the format's range, rounded to ``torch.float8_e4m3fn`` or ``torch.float8_e5m2`` (a real fp8 tensor,
so the values are exactly those fp8 holds), and divided by the scale again for the matmul, which runs in fp32.
The scales follow the recipe's delayed scaling: each tensor role (input, weight, gradient) keeps an amax history,
and its scale, a power of two, is recomputed from that history every ``interval`` steps, before the step's own
amax is recorded. Everything is tensor ops, with no host reads, so the engine's layers can be captured in an HPU
graph.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist

from gaudi_standin.bridge.habana_frameworks.torch.hpex.experimental.transformer_engine.recipe import (
    DelayedScaling,
    Format,
)
from gaudi_standin.emulator import machine

__all__ = [
    "FP8GlobalStateManager",
    "fp8_autocast",
    "get_fp8_recipe",
    "is_fp8_available",
    "is_fp8_enabled",
    "set_measurement_mode",
]


@dataclass
class _Fp8State:
    enabled: bool = False
    recipe: DelayedScaling | None = None
    group: Any = None
    measurement: bool | None = None  # None: amaxes are measured at every fp8 step (the engine's default)


_state = _Fp8State()


def is_fp8_available() -> tuple[bool, str]:
    """``(available, reason)``: fp8 needs a Gaudi2 or later (the emulated generation decides)."""
    name = machine.current().device_name()
    if name == "GAUDI":
        return False, "FP8 not supported on Gaudi, Gaudi2 or higher required"
    return True, ""


def is_fp8_enabled() -> bool:
    """Whether an enabled ``fp8_autocast`` is active."""
    return _state.enabled


def get_fp8_recipe() -> DelayedScaling:
    """The recipe of the active ``fp8_autocast`` (the engine's default outside one)."""
    return _state.recipe if _state.recipe is not None else DelayedScaling()


def get_fp8_group() -> Any:
    """The process group the active ``fp8_autocast`` reduces amaxes over (``None``: all processes)."""
    return _state.group


def set_measurement_mode(manual: bool, manual_value: bool = True) -> None:
    """Choose whether fp8 steps measure amaxes: ``manual_value`` when ``manual``, always otherwise.

    With measurement off, a step quantizes with the scales it has and leaves the amax history alone (how a model is
    run between measurements, or graphs are captured once with and once without measurement).
    """
    _state.measurement = bool(manual_value) if manual else None


def is_measurement() -> bool:
    """Whether the next fp8 step measures amaxes."""
    return _state.measurement is not False


class FP8GlobalStateManager:
    """The newer engines' home of the same queries."""

    is_fp8_available = staticmethod(is_fp8_available)
    is_fp8_enabled = staticmethod(is_fp8_enabled)
    get_fp8_recipe = staticmethod(get_fp8_recipe)
    get_fp8_group = staticmethod(get_fp8_group)
    set_measurement_mode = staticmethod(set_measurement_mode)
    is_measurement = staticmethod(is_measurement)


@contextmanager
def fp8_autocast(
    enabled: bool = False,
    force_measurement: bool | None = None,
    fp8_recipe: DelayedScaling | None = None,
    fp8_group: Any = None,
) -> Iterator[None]:
    """Run the engine's layers in fp8 inside the block (when ``enabled``), scaled by ``fp8_recipe``."""
    if enabled:
        available, reason = is_fp8_available()
        if not available:
            raise RuntimeError(f"fp8_autocast(enabled=True): {reason}.")
    if fp8_recipe is not None and not isinstance(fp8_recipe, DelayedScaling):
        raise TypeError(f"`fp8_recipe` must be a recipe.DelayedScaling, got {type(fp8_recipe).__name__}.")
    saved = _Fp8State(_state.enabled, _state.recipe, _state.group)
    _state.enabled, _state.recipe, _state.group = enabled, fp8_recipe or DelayedScaling(), fp8_group
    try:
        yield
    finally:
        _state.enabled, _state.recipe, _state.group = saved.enabled, saved.recipe, saved.group


class ScalingState:
    """Delayed scaling of ``roles`` tensor roles of one direction (forward: input and weight; backward: gradient).

    ``amax_history[i, r]`` is role ``r``'s amax ``i`` steps ago; ``scale[r]`` multiplies the tensor before the cast.
    The first steps run with scale 1, as the engine's do, until a history exists.
    """

    def __init__(self, roles: int, recipe: DelayedScaling, forward: bool, device: torch.device) -> None:
        self.forward = forward
        self.history_len = recipe.amax_history_len
        self.amax_history = torch.zeros(recipe.amax_history_len, roles, device=device)
        self.scale = torch.ones(roles, device=device)
        self.steps = 0

    @property
    def scale_inv(self) -> torch.Tensor:
        """What an fp8 tensor of each role is multiplied by to give back its values."""
        return self.scale.reciprocal()

    def snapshot(self) -> dict[str, Any]:
        """A copy of the state (``save_fp8_meta``)."""
        return {"scale": self.scale.clone(), "amax_history": self.amax_history.clone(), "steps": self.steps}

    def restore(self, saved: dict[str, Any]) -> None:
        """Copy a :meth:`snapshot` back into this state's own tensors, which captured HPU graphs keep reading."""
        self.scale.copy_(saved["scale"])
        self.amax_history.copy_(saved["amax_history"])
        self.steps = saved["steps"]

    def fits(self, recipe: DelayedScaling, roles: int) -> bool:
        return self.history_len == recipe.amax_history_len and self.scale.shape[0] == roles

    def update_scales(self, recipe: DelayedScaling) -> None:
        """Recompute the scales from the history when the recipe's interval says so (not before a first step)."""
        if self.steps == 0 or self.steps % recipe.interval != 0:
            return
        history = self.amax_history
        if callable(recipe.amax_compute_algo):
            amax = recipe.amax_compute_algo(history)
        elif recipe.amax_compute_algo == "max":
            amax = history.amax(dim=0)
        else:
            amax = history[0]
        if recipe.reduce_amax and dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
            amax = amax.clone()
            dist.all_reduce(amax, op=dist.ReduceOp.MAX, group=get_fp8_group())
        fp8_max = recipe.fp8_format.max(self.forward)
        if recipe.scaling_factor_compute_algo is not None:
            new_scale = recipe.scaling_factor_compute_algo(amax, self.scale, fp8_max, recipe)
        else:
            exponent = torch.floor(torch.log2(fp8_max / amax)) - recipe.margin
            new_scale = torch.where(amax > 0.0, torch.pow(2.0, exponent), self.scale)
        self.scale.copy_(new_scale)

    def record(self, amaxes: list[torch.Tensor]) -> None:
        """Push this step's amax of each role onto the history."""
        current = torch.stack([amax.float() for amax in amaxes])
        if self.history_len > 1:
            self.amax_history.copy_(torch.roll(self.amax_history, 1, dims=0))
        self.amax_history[0].copy_(current)
        self.steps += 1


def quantize(tensor: torch.Tensor, scale: torch.Tensor, fmt: Format, forward: bool) -> torch.Tensor:
    """``tensor * scale`` saturated to the format's range and cast to its torch fp8 dtype."""
    fp8_max = fmt.max(forward)
    return (tensor.float() * scale).clamp(-fp8_max, fp8_max).to(fmt.dtype(forward))


def dequantize(fp8: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """The fp32 values an fp8 tensor stands for: divided by the scale it was cast with."""
    return fp8.float() / scale
