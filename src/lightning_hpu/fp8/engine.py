"""fp8 training with the Intel Gaudi Transformer Engine: swapping ``nn.Linear`` layers and building the recipe.

The engine (``Linear``, ``fp8_autocast``, ``recipe.DelayedScaling``) comes from the runtime backend, so only the
bridge module imports it; the functions here take it as an argument and hold the conversion logic.

The engine's ``Linear`` is given the *same* weight and bias parameters as the layer it replaces: the trained values
are kept exactly, and optimizers built before the conversion (as in Fabric) keep updating the live parameters.
Outside an enabled ``fp8_autocast`` the engine's ``Linear`` computes the same ``F.linear``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

import torch
from torch import nn

#: Chooses the layers to run in fp8: called with each ``nn.Linear``'s qualified name and the layer.
LayerFilter = Callable[[str, nn.Linear], bool]


def make_recipe(te: ModuleType, fp8_recipe: Any | Mapping[str, Any] | None) -> Any:
    """The ``DelayedScaling`` recipe for ``fp8_recipe``: the engine's default (``None`` or the class), a recipe, or
    its keyword arguments.

    In a mapping, ``fp8_format`` may be the format's name (``"E5M2"``, ``"HYBRID"``, ``"E4M3"``).
    """
    if fp8_recipe is None or fp8_recipe is te.recipe.DelayedScaling:  # the class itself: its defaults
        return te.recipe.DelayedScaling()
    if isinstance(fp8_recipe, te.recipe.DelayedScaling):
        return fp8_recipe
    if not isinstance(fp8_recipe, Mapping):
        raise TypeError(
            f"`fp8_recipe` must be a DelayedScaling recipe or a dict of its arguments, got {type(fp8_recipe).__name__}."
        )
    kwargs = dict(fp8_recipe)
    fp8_format = kwargs.get("fp8_format")
    if isinstance(fp8_format, str):
        names = [member.name for member in te.recipe.Format]
        if fp8_format.upper() not in names:
            raise ValueError(f"`fp8_recipe['fp8_format']={fp8_format!r}` is not an fp8 format: use one of {names}.")
        kwargs["fp8_format"] = te.recipe.Format[fp8_format.upper()]
    try:
        return te.recipe.DelayedScaling(**kwargs)
    except TypeError as err:
        raise ValueError(f"`fp8_recipe={fp8_recipe!r}` is not valid for DelayedScaling: {err}") from None


def _engine_linear(te: ModuleType, layer: nn.Linear, device: torch.device) -> nn.Module:
    replacement: nn.Module = te.Linear(
        layer.in_features,
        layer.out_features,
        bias=layer.bias is not None,
        params_dtype=layer.weight.dtype,
        device=device,
    )
    replacement.weight = layer.weight
    if layer.bias is not None:
        replacement.bias = layer.bias
    replacement.train(layer.training)
    return replacement


def replace_linear_layers(
    module: nn.Module, te: ModuleType, device: torch.device, layer_filter: LayerFilter | None = None
) -> tuple[nn.Module, list[str]]:
    """Swap the ``nn.Linear`` layers of ``module`` that ``layer_filter`` selects (all by default) for ``te.Linear``.

    Only layers of type exactly ``nn.Linear`` are candidates: subclasses have their own forward, which the engine's
    layer would drop. Children are replaced in place; the returned module differs from ``module`` only when
    ``module`` itself is a ``nn.Linear``.

    Returns:
        The converted module and the qualified names of the layers swapped.
    """

    def selected(name: str, layer: nn.Module) -> bool:
        return type(layer) is nn.Linear and (layer_filter is None or bool(layer_filter(name, layer)))

    if selected("", module):
        assert isinstance(module, nn.Linear)
        return _engine_linear(te, module, device), [""]
    replaced: list[str] = []
    swaps: dict[int, nn.Module] = {}  # a layer shared by several parents stays shared
    for name, parent in list(module.named_modules()):
        for child_name, child in list(parent.named_children()):
            qualified = f"{name}.{child_name}" if name else child_name
            if id(child) in swaps or selected(qualified, child):
                assert isinstance(child, nn.Linear)
                if id(child) not in swaps:
                    swaps[id(child)] = _engine_linear(te, child, device)
                    replaced.append(qualified)
                setattr(parent, child_name, swaps[id(child)])
    return module, replaced
