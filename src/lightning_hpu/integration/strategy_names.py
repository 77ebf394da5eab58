"""What Lightning's strategy names mean with an HPU accelerator: the tables, for the Trainer and Fabric.

A Lightning strategy name is registered with a strategy class and preset settings (``"deepspeed_stage_2"`` is
``DeepSpeedStrategy`` with ``stage=2``). With ``accelerator="hpu"``, :data:`HPU_STRATEGY_TWINS` says, per Lightning
strategy class, which HPU strategy takes those settings instead, or why none can and which HPU strategy to use.
Being keyed by class, a name that a new Lightning release registers for a known family is mapped too, and a name
of an unknown family is refused, never run on the wrong device. The Trainer and Fabric share these tables: their
classes of the same family have the same name.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lightning_hpu.runtime.base import HPUConfigurationError
from lightning_hpu.support.lightning_text import lightning_refusal


@dataclass(frozen=True)
class HPUTwin:
    """The HPU strategy registered as ``name`` runs this family, with the Lightning name's preset settings: all of
    them, so ``"ddp_spawn"`` spawns its processes on HPUs too."""

    name: str


@dataclass(frozen=True)
class Refusal:
    """No HPU strategy runs this family (``reason``); ``use`` names the HPU strategy to choose instead."""

    use: str
    reason: str

    def message(self, given: str, owner: str, lightning_message: str = "") -> str:
        """The sentence, after Lightning's own message where Lightning refuses the name too."""
        return (
            f"{lightning_message}`{owner}(strategy={given})` cannot drive an HPU ({self.reason}); use"
            f" strategy={self.use!r} instead."
        )


#: Per Lightning strategy class name: the HPU strategy taking its names' settings, or a refusal. A class not listed
#: is looked up by its bases (the nearest listed one wins), so XLA's subclasses of DDP are listed themselves.
HPU_STRATEGY_TWINS: dict[str, HPUTwin | Refusal] = {
    "SingleDeviceStrategy": HPUTwin("hpu_single"),
    "DDPStrategy": HPUTwin("hpu_parallel"),
    "DeepSpeedStrategy": HPUTwin("hpu_deepspeed"),
    "FSDPStrategy": HPUTwin("hpu_fsdp"),
    "ModelParallelStrategy": HPUTwin("hpu_model_parallel"),
    "XLAFSDPStrategy": Refusal("hpu_fsdp", "XLA strategies drive TPUs"),
    "XLAStrategy": Refusal("hpu_parallel", "XLA strategies drive TPUs"),
    "SingleDeviceXLAStrategy": Refusal("hpu_single", "XLA strategies drive TPUs"),
    "DataParallelStrategy": Refusal("hpu_parallel", "DataParallel runs several devices from one process, on CUDA"),
}

#: Families not in :data:`HPU_STRATEGY_TWINS` (XLA, TPU, a new Lightning family) are refused with this.
OTHER_DEVICE_REFUSAL = Refusal("hpu_parallel", "it drives another accelerator; for one HPU use 'hpu_single'")

#: Preset settings that no HPU strategy can honour, whatever the family.
REFUSED_SETTINGS: dict[tuple[str, Any], Refusal] = {
    ("start_method", "fork"): Refusal(
        "hpu_parallel",
        "it forks the process, and a process that opened an HPU cannot be forked; run a script, not a notebook",
    ),
}

#: Names that mean an HPU strategy only where an HPU is asked for, so they stay out of the registries every Lightning
#: program shares (a CPU program keeps Lightning's "invalid strategy name" for them): Lightning's ``"model_parallel"``
#: (Lightning registers no name for its ``ModelParallelStrategy``) and lightning-habana's ``"single_hpu"``.
HPU_ONLY_NAMES: dict[str, str] = {"model_parallel": "hpu_model_parallel", "single_hpu": "hpu_single"}

#: Strategy objects of other projects that run on HPU as an HPU twin, by the module their class comes from: the
#: function (lazily imported, so that the other project stays optional) that builds the twin from the object.
HPU_STRATEGY_OBJECT_TWINS: dict[str, str] = {"ray.train.lightning": "lightning_hpu.integration.ray_objects:hpu_twin_of"}


def _family(strategy_cls: type) -> HPUTwin | Refusal:
    for base in strategy_cls.__mro__:
        if base.__name__ in HPU_STRATEGY_TWINS:
            return HPU_STRATEGY_TWINS[base.__name__]
    return OTHER_DEVICE_REFUSAL


def hpu_only_name(strategy: Any, registry: Mapping[str, Any]) -> Any:
    """The registered HPU name that ``strategy`` means when it is one of :data:`HPU_ONLY_NAMES` and ``registry`` lacks
    it; ``strategy`` as given otherwise. Call it where an HPU is asked for only."""
    if not isinstance(strategy, str) or strategy.lower() in registry:
        return strategy
    name = HPU_ONLY_NAMES.get(strategy.lower())
    return name if name is not None and name in registry else strategy


def hpu_strategy_for(
    name: str,
    registry: Mapping[str, Any],
    is_hpu_strategy: Callable[[type], bool],
    owner: str,
    lightning_check: Callable[[], object] | None = None,
) -> tuple[str, dict[str, Any]] | None:
    """The HPU strategy name and settings that a registered Lightning strategy ``name`` means on HPU.

    ``None`` when ``name`` already is an HPU strategy. Raises a one-sentence ``HPUConfigurationError`` naming the
    HPU strategy to use when no HPU strategy can run it, after the message of Lightning's own ``lightning_check`` of
    the name where that refuses it too. Build the strategy with :func:`build_strategy`.
    """
    entry = registry[name]
    strategy_cls: type = entry["strategy"]
    if is_hpu_strategy(strategy_cls):
        return None
    settings = dict(entry["init_params"])
    rule = _family(strategy_cls)
    for (key, value), refusal in REFUSED_SETTINGS.items():
        if settings.get(key) == value:
            rule = refusal
    if isinstance(rule, HPUTwin) and rule.name not in registry:
        rule = Refusal(rule.name, f"this lightning-hpu build does not register {rule.name!r}")
    if isinstance(rule, Refusal):
        lightning_message = lightning_refusal(lightning_check, ValueError) if lightning_check else ""
        raise HPUConfigurationError(rule.message(repr(name), owner, lightning_message))
    return rule.name, settings


def build_strategy(registry: Mapping[str, Any], name: str, settings: Mapping[str, Any]) -> Any:
    """The strategy registered as ``name``, with ``settings`` over its registered ones."""
    entry = registry[name]
    return entry["strategy"](**{**entry["init_params"], **settings})


def hpu_twin_of_object(strategy: object) -> Any | None:
    """The HPU twin of a strategy object whose class derives from one of :data:`HPU_STRATEGY_OBJECT_TWINS` (Ray's),
    ``None`` for other objects. Call it for objects that are not HPU strategies already."""
    modules = {base.__module__ for base in type(strategy).__mro__}
    for prefix, target in HPU_STRATEGY_OBJECT_TWINS.items():
        if any(module == prefix or module.startswith(prefix + ".") for module in modules):
            module_name, function_name = target.split(":")
            return getattr(importlib.import_module(module_name), function_name)(strategy)
    return None


def refuse_strategy_instance(strategy: object, owner: str) -> HPUConfigurationError:
    """The error for a non-HPU strategy object given with an HPU accelerator, naming the HPU strategy to use."""
    rule = _family(type(strategy))
    use = rule.name if isinstance(rule, HPUTwin) else rule.use
    reason = "it never marks lazy steps nor binds the HPU" if isinstance(rule, HPUTwin) else rule.reason
    return HPUConfigurationError(Refusal(use, reason).message(f"{type(strategy).__name__}(...)", owner))
