"""What the connector patches decide: whether a run is an HPU run, and which names to refuse as misspelt.

Shared by the Trainer's and Fabric's connectors (:mod:`lightning_hpu.integration.connectors`): the registries of
each, HPU accelerator flags, and the HPU-only precision names (``"fp8"``, ...) that Lightning's own check refuses.
"""

from __future__ import annotations

from typing import Any, get_args

from lightning.fabric.accelerators import ACCELERATOR_REGISTRY as FABRIC_ACCELERATOR_REGISTRY
from lightning.fabric.connector import _PRECISION_INPUT_STR
from lightning.fabric.strategies import STRATEGY_REGISTRY as FABRIC_STRATEGY_REGISTRY
from lightning.pytorch.accelerators import AcceleratorRegistry
from lightning.pytorch.strategies import StrategyRegistry

from lightning_hpu.fabric.accelerator import HPUAccelerator as FabricHPUAccelerator
from lightning_hpu.precision.hpu_precision import PRECISION_ALIASES, HPUPrecisionInput, unsupported_precision
from lightning_hpu.runtime import HPUConfigurationError, hpu_available
from lightning_hpu.support.suggestions import closest_name, hpu_names

#: Precision names of the HPU plugins that Lightning's own precision check does not know (``"fp8"``, ...).
HPU_ONLY_PRECISIONS = tuple(name for name in get_args(HPUPrecisionInput) if name not in get_args(_PRECISION_INPUT_STR))


def is_hpu(accelerator_flag: Any) -> bool:
    """Whether a connector's accelerator flag means HPU (the name or an accelerator instance)."""
    return accelerator_flag == "hpu" or isinstance(accelerator_flag, FabricHPUAccelerator)


def multi_device(connector: Any) -> bool:
    return connector._num_nodes_flag > 1 or len(connector._parallel_devices) > 1


def strategy_registry(fabric: bool) -> Any:
    return FABRIC_STRATEGY_REGISTRY if fabric else StrategyRegistry


def strategy_registry_names(fabric: bool) -> list[str]:
    return list(strategy_registry(fabric).available_strategies())


def accelerator_registry_names(fabric: bool) -> list[str]:
    registry = FABRIC_ACCELERATOR_REGISTRY if fabric else AcceleratorRegistry
    return list(registry.available_accelerators())


def means_hpu(accelerator_flag: Any) -> bool:
    """Whether the connector will run on HPU: HPU named or given, or ``"auto"`` with an HPU there."""
    return is_hpu(accelerator_flag) or (accelerator_flag == "auto" and hpu_available())


def refuse_misspelt_names(strategy: Any, accelerator: Any, owner: str, fabric: bool) -> None:
    """Refuse an unknown strategy or accelerator name that is close to an HPU name, saying which one was meant.

    Lightning's own errors list its names only; these name the ``hpu``/``hpu_*`` name the user probably meant.
    """
    accelerators = accelerator_registry_names(fabric)
    if isinstance(accelerator, str) and accelerator not in (*accelerators, "auto", "gpu"):  # compared as Lightning does
        guess = closest_name(accelerator, [*accelerators, "auto", "gpu"])
        if guess is not None and guess in hpu_names(accelerators):
            raise HPUConfigurationError(
                f"`{owner}(accelerator={accelerator!r})` is not a registered accelerator: did you mean {guess!r}?"
            )
    strategies = strategy_registry_names(fabric)
    if not isinstance(strategy, str) or strategy.lower() in (*strategies, "auto"):
        return
    if not (is_hpu(accelerator) or strategy.lower().startswith("hpu")):
        return  # not an HPU run: Lightning's own error
    guess = closest_name(strategy, hpu_names(strategies)) or closest_name(strategy, strategies)
    hint = f"did you mean {guess!r}?" if guess is not None else f"the HPU ones are {', '.join(hpu_names(strategies))}."
    raise HPUConfigurationError(f"`{owner}(strategy={strategy!r})` is not a registered strategy: {hint}")


def hpu_precision_name(precision: Any, accelerator: Any, owner: str) -> str | None:
    """The HPU-only precision name (``"fp8"``, ...) that Lightning's check would refuse, else ``None``.

    Such a name with another accelerator, or a misspelt precision on HPU, is refused here with one sentence.
    """
    if not isinstance(precision, str) or precision in get_args(_PRECISION_INPUT_STR) or precision.isdigit():
        return None
    if precision in (*HPU_ONLY_PRECISIONS, *PRECISION_ALIASES):
        if precision not in HPU_ONLY_PRECISIONS:
            return None  # Lightning's own spelling
        if not means_hpu(accelerator):
            raise HPUConfigurationError(
                f"`{owner}(precision={precision!r})` is an HPU precision: use it with accelerator='hpu'."
            )
        return precision
    if means_hpu(accelerator):
        raise unsupported_precision(precision, owner)
    return None
