"""Lightning's own strategy objects given with an HPU accelerator: rebuilt as their HPU twins, same arguments.

LitGPT and many scripts build ``FSDPStrategy(auto_wrap_policy={Block}, ...)`` or ``DDPStrategy(...)`` themselves.
With ``accelerator="hpu"`` the connectors (:mod:`lightning_hpu.integration.connectors`, Trainer and Fabric alike)
pass such an object to :func:`hpu_twin_of`, which builds its HPU twin (:data:`HPU_OBJECT_TWINS`) from the arguments
the object was built with (:func:`lightning_hpu.integration.strategy_arguments.named_arguments`: why recorded
arguments, not attributes, is said there) and logs one line saying so. An argument the HPU cannot honour
(:func:`refusal`) is refused with one sentence naming it, before any process starts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from lightning.fabric.strategies import DDPStrategy as FabricDDPStrategy
from lightning.fabric.strategies import DeepSpeedStrategy as FabricDeepSpeedStrategy
from lightning.fabric.strategies import FSDPStrategy as FabricFSDPStrategy
from lightning.fabric.strategies import ModelParallelStrategy as FabricModelParallelStrategy
from lightning.fabric.utilities.rank_zero import rank_zero_info
from lightning.pytorch.strategies import DDPStrategy, DeepSpeedStrategy, FSDPStrategy, ModelParallelStrategy

from lightning_hpu.distributed.start_methods import HPU_START_METHODS
from lightning_hpu.fabric import strategies as fabric_strategies
from lightning_hpu.fabric.accelerator import HPUAccelerator
from lightning_hpu.fabric.plugins.precision import HPUPrecision
from lightning_hpu.integration import strategy_arguments
from lightning_hpu.precision.deepspeed import FP8DeepSpeedPrecisionHooks
from lightning_hpu.precision.fsdp import HPUFSDPPrecisionHelpers
from lightning_hpu.pytorch.strategies.deepspeed import HPUDeepSpeedStrategy
from lightning_hpu.pytorch.strategies.fsdp import HPUFSDPStrategy
from lightning_hpu.pytorch.strategies.model_parallel import HPUModelParallelStrategy
from lightning_hpu.pytorch.strategies.parallel import HPUParallelStrategy
from lightning_hpu.runtime import HPUConfigurationError

#: Each Lightning strategy class (Trainer's and Fabric's) and the HPU twin its objects run as.
HPU_OBJECT_TWINS: dict[type, type] = {
    DDPStrategy: HPUParallelStrategy,
    FSDPStrategy: HPUFSDPStrategy,
    ModelParallelStrategy: HPUModelParallelStrategy,
    DeepSpeedStrategy: HPUDeepSpeedStrategy,
    FabricDDPStrategy: fabric_strategies.HPUDDPStrategy,
    FabricFSDPStrategy: fabric_strategies.HPUFSDPStrategy,
    FabricModelParallelStrategy: fabric_strategies.HPUModelParallelStrategy,
    FabricDeepSpeedStrategy: fabric_strategies.HPUDeepSpeedStrategy,
}

#: The precision plugins of lightning-hpu (every HPU precision derives from one of these).
_HPU_PRECISIONS = (HPUPrecision, HPUFSDPPrecisionHelpers, FP8DeepSpeedPrecisionHooks)


def _start_method(value: Any) -> str | None:
    if value in HPU_START_METHODS:
        return None
    return "a process that opened an HPU cannot be forked; use 'popen' (the default) or 'spawn'"


def _process_group_backend(value: Any) -> str | None:
    if value in (None, "hccl"):
        return None
    return "HPUs communicate over HCCL; leave it unset (the HPU strategies use 'hccl')"


def _accelerator(value: Any) -> str | None:
    if value is None or isinstance(value, HPUAccelerator):
        return None
    return "it is not the HPU accelerator; leave it unset and pass accelerator='hpu'"


def _parallel_devices(value: Any) -> str | None:
    if value is None or isinstance(value, int) or all(torch.device(device).type == "hpu" for device in value):
        return None
    return "its devices are not HPUs; leave it unset and pass devices=N"


def _precision(value: Any) -> str | None:
    if value is None or isinstance(value, _HPU_PRECISIONS):
        return None
    return "it is not an HPU precision plugin; leave it unset and pass precision='bf16-mixed' (or another name)"


#: Per argument name: why a value cannot be carried over to the HPU twin (``None``: it can).
ARGUMENT_RULES: dict[str, Callable[[Any], str | None]] = {
    "start_method": _start_method,
    "process_group_backend": _process_group_backend,
    "accelerator": _accelerator,
    "parallel_devices": _parallel_devices,
    "precision": _precision,
    "precision_plugin": _precision,
}


def refusal(name: str, value: Any) -> str | None:
    """Why argument ``name=value`` of a Lightning strategy cannot be carried over to its HPU twin, or ``None``."""
    rule = ARGUMENT_RULES.get(name)
    return None if rule is None else rule(value)


def public_name(twin: type) -> str:
    """Where users import ``twin`` from (``lightning_hpu.HPUFSDPStrategy``, ``lightning_hpu.fabric.strategies...``)."""
    package = (
        "lightning_hpu.fabric.strategies" if twin.__module__.startswith("lightning_hpu.fabric") else "lightning_hpu"
    )
    return f"{package}.{twin.__name__}"


def hpu_twin_of(strategy: object, owner: str) -> Any | None:
    """The HPU twin of a Lightning strategy object, built with the same arguments; ``None`` for an object of a class
    without a twin (the connector refuses it). A subclass of such a class is refused, naming the twin to derive
    from: its overrides would be lost."""
    given = type(strategy)
    twin = HPU_OBJECT_TWINS.get(given)
    if twin is None:
        base = next((cls for cls in given.__mro__ if cls in HPU_OBJECT_TWINS), None)
        if base is None:
            return None
        raise HPUConfigurationError(
            f"`{owner}(strategy={given.__name__}(...))` cannot drive an HPU (lightning-hpu rebuilds Lightning's own"
            f" {base.__name__} as its HPU twin, and a subclass's overrides would be lost); derive it from"
            f" {public_name(HPU_OBJECT_TWINS[base])} instead."
        )
    arguments = strategy_arguments.named_arguments(strategy)
    if arguments is None:
        raise HPUConfigurationError(
            f"`{given.__name__}(...)` was built before `import lightning_hpu`, so its arguments are unknown: import"
            f" lightning_hpu first, or pass {public_name(twin)}(...)."
        )
    for name, value in arguments.items():
        reason = refusal(name, value)
        if reason is not None:
            raise HPUConfigurationError(
                f"`{given.__name__}({name}={value!r})` cannot be carried over to {twin.__name__} on HPU: {reason}."
            )
    built = twin(**arguments)
    rank_zero_info(
        f"`{owner}(strategy={given.__name__}(...))` runs on HPU as {public_name(twin)}, with the same arguments."
    )
    return built
