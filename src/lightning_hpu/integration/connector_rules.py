"""What the connector patches decide: whether a run is an HPU run, and which names to refuse as misspelt.

Shared by the Trainer's and Fabric's connectors (:mod:`lightning_hpu.integration.connectors`): the registries of
each, HPU accelerator flags, the HPU's own precision names (``"fp8"``, ...), read here so that Lightning's check never
sees them, the model-parallel check the HPU precision step makes for both connectors (what each name means is
:mod:`lightning_hpu.precision.names`), and the hint Lightning's ``accelerator="gpu"`` error gets where the machine's
accelerators are HPUs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from lightning.fabric.accelerators import ACCELERATOR_REGISTRY as FABRIC_ACCELERATOR_REGISTRY
from lightning.fabric.connector import _convert_precision_to_unified_args
from lightning.fabric.plugins import Precision
from lightning.fabric.strategies import STRATEGY_REGISTRY as FABRIC_STRATEGY_REGISTRY
from lightning.pytorch.accelerators import AcceleratorRegistry
from lightning.pytorch.strategies import StrategyRegistry

from lightning_hpu.fabric.accelerator import HPUAccelerator as FabricHPUAccelerator
from lightning_hpu.precision.hpu_precision import unsupported_precision
from lightning_hpu.precision.names import PRECISIONS, hpu_only_names, lookup
from lightning_hpu.runtime import HPUConfigurationError, hpu_available
from lightning_hpu.support.lightning_text import lightning_refusal
from lightning_hpu.support.suggestions import closest_name, hpu_names

#: Precision names of the HPU plugins that Lightning's own precision check does not know (``"fp8"``, ...).
HPU_ONLY_PRECISIONS = hpu_only_names()


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


def hpu_only_precision(precision: Any, accelerator: Any, owner: str, plugins: Any) -> str | None:
    """The HPU's own precision name (``"fp8"``, ...) given to the connector, else ``None`` (Lightning's check reads
    Lightning's names itself). The HPU's name is read here, and Lightning's check is not given it.

    Such a name with another accelerator, or with a precision plugin as well, and a misspelt precision on HPU, are
    refused here with one sentence (Lightning's own where it has one).
    """
    meaning = lookup(precision)
    if precision is None or (meaning is not None and meaning.lightning):
        return None
    if meaning is None:
        if means_hpu(accelerator):
            raise unsupported_precision(precision, owner)
        return None  # Lightning's error alone
    if not means_hpu(accelerator):  # Lightning refuses the name too: its words first
        lightning_message = lightning_refusal(lambda: _convert_precision_to_unified_args(precision), ValueError)
        raise HPUConfigurationError(
            f"{lightning_message}`{owner}(precision={precision!r})` is an HPU precision: use it with accelerator='hpu'."
        )
    given = [plugin for plugin in _as_list(plugins) if isinstance(plugin, Precision)]
    if given:  # as Lightning refuses a name and a plugin together, in its words
        raise ValueError(f"Received both `precision={meaning.name}` and `plugins={given[0]}`. Choose one.")
    return meaning.name


def _as_list(plugins: Any) -> list[Any]:
    if plugins is None:
        return []
    return list(plugins) if isinstance(plugins, Iterable) else [plugins]


def check_model_parallel_precision(strategy: Any, precision: str, owner: str, model_parallel_cls: type) -> None:
    """A ``ModelParallelStrategy`` runs the precisions Lightning's connectors let it run (the ``model parallel``
    column of :mod:`lightning_hpu.precision.names`), refused in Lightning's words, for the Trainer and Fabric alike."""
    meaning = lookup(precision)
    if isinstance(strategy, model_parallel_cls) and (meaning is None or not meaning.model_parallel):
        supported = [name for name, meaning in PRECISIONS.items() if meaning.model_parallel]
        raise ValueError(
            f"The `ModelParallelStrategy` does not support `{owner}(..., precision={precision!r})`."
            f" Choose a different precision among: {', '.join(supported)}."
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
