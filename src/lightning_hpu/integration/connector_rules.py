"""What the connector patches decide: whether a run is an HPU run, and which names to refuse as misspelt.

Shared by the Trainer's and Fabric's connectors (:mod:`lightning_hpu.integration.connectors`): the registries of
each, HPU accelerator flags, the HPU-only precision names (``"fp8"``, ...) that Lightning's own check refuses, the
checks of Lightning's that the HPU precision step must still make, and the hint Lightning's ``accelerator="gpu"``
error gets where the machine's accelerators are HPUs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, get_args

from lightning.fabric.accelerators import ACCELERATOR_REGISTRY as FABRIC_ACCELERATOR_REGISTRY
from lightning.fabric.connector import _PRECISION_INPUT_STR
from lightning.fabric.plugins import Precision
from lightning.fabric.strategies import STRATEGY_REGISTRY as FABRIC_STRATEGY_REGISTRY
from lightning.fabric.strategies import ModelParallelStrategy as FabricModelParallelStrategy
from lightning.pytorch.accelerators import AcceleratorRegistry
from lightning.pytorch.strategies import StrategyRegistry

from lightning_hpu.fabric.accelerator import HPUAccelerator as FabricHPUAccelerator
from lightning_hpu.precision.hpu_precision import PRECISION_ALIASES, HPUPrecisionInput, unsupported_precision
from lightning_hpu.runtime import HPUConfigurationError, hpu_available
from lightning_hpu.support.lightning_text import lightning_refusal
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


def refuse_misspelt_names(
    strategy: Any, accelerator: Any, owner: str, fabric: bool, lightning_check: Callable[[], object]
) -> None:
    """Refuse an unknown strategy or accelerator name that is close to an HPU name, saying which one was meant.

    Lightning's own errors list its names only; these add the ``hpu``/``hpu_*`` name the user probably meant, after
    Lightning's message (``lightning_check`` is Lightning's check of the same arguments, which refuses the name too).
    """
    strategies = strategy_registry_names(fabric)
    accelerators = accelerator_registry_names(fabric)
    unknown = isinstance(strategy, str) and strategy.lower() not in (*strategies, "auto")  # first, as Lightning does
    if unknown and (is_hpu(accelerator) or strategy.lower().startswith("hpu")):  # else Lightning's error alone
        guess = closest_name(strategy, hpu_names(strategies)) or closest_name(strategy, strategies)
        hint = f"did you mean {guess!r}?" if guess else f"the HPU ones are {', '.join(hpu_names(strategies))}."
        lightning_message = lightning_refusal(lightning_check, ValueError)
        raise HPUConfigurationError(
            f"{lightning_message}`{owner}(strategy={strategy!r})` is not a registered strategy: {hint}"
        )
    if isinstance(accelerator, str) and accelerator not in (*accelerators, "auto", "gpu"):  # compared as Lightning does
        guess = closest_name(accelerator, [*accelerators, "auto", "gpu"])
        if guess is not None and guess in hpu_names(accelerators):
            lightning_message = lightning_refusal(lightning_check, ValueError)
            raise HPUConfigurationError(
                f"{lightning_message}`{owner}(accelerator={accelerator!r})` is not a registered accelerator: did you"
                f" mean {guess!r}?"
            )


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


#: The precisions Lightning's connectors let a ``ModelParallelStrategy`` run (their ``mp_precision_supported``).
MODEL_PARALLEL_PRECISIONS = ("32-true", "bf16-mixed", "bf16-true", "16-true")


def check_fabric_precision(connector: Any, original: Callable[[Any], Any]) -> None:
    """What Lightning's Fabric checks in the step the HPU precision replaces (its ``_check_and_init_precision``; the
    Trainer keeps Lightning's own ``_validate_precision_choice``), with Lightning's words: a precision plugin given
    is checked by Lightning's step itself (``original``, which only checks and returns it), and a
    ``ModelParallelStrategy`` runs :data:`MODEL_PARALLEL_PRECISIONS` only."""
    if isinstance(connector._precision_instance, Precision):
        original(connector)
    precision = connector._precision_input
    if isinstance(connector.strategy, FabricModelParallelStrategy) and precision not in MODEL_PARALLEL_PRECISIONS:
        raise ValueError(
            f"The `ModelParallelStrategy` does not support `Fabric(..., precision={precision!r})`."
            f" Choose a different precision among: {', '.join(MODEL_PARALLEL_PRECISIONS)}."
        )


def hpus_present() -> bool:
    """Whether this machine's accelerators are HPUs (a Gaudi, or the stand-in chosen); never raises."""
    try:
        return hpu_available()
    except HPUConfigurationError:  # a bad LIGHTNING_HPU_BACKEND is refused where HPUs are asked for
        return False


def with_gpu_hint(error: Exception) -> Exception:
    """Lightning's "No supported gpu backend found!" (same class, same words) with the HPU sentence after it."""
    return type(error)(
        f"{error} This machine's accelerators are HPUs (Intel Gaudi): pass accelerator='hpu', or 'auto' to use them."
    )
