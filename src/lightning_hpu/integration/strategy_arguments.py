"""The arguments a Lightning strategy object was built with, so that it can be rebuilt as its HPU twin.

Lightning's ``DDPStrategy``, ``FSDPStrategy``, ``ModelParallelStrategy`` and ``DeepSpeedStrategy`` (the Trainer's
and Fabric's) are built by user code and by other projects (LitGPT builds ``FSDPStrategy(auto_wrap_policy={Block},
...)``; Ray's ``RayDDPStrategy(...)`` passes its arguments on to ``DDPStrategy``). :func:`install` makes their
``__init__`` methods keep the arguments on the object; :func:`init_arguments` returns them as given and
:func:`named_arguments` by name, and the HPU twin is built from them with its own ``__init__`` (its HCCL defaults and
checks), not by copying state.

Why recorded arguments rather than the object's attributes: Lightning folds its arguments into other state under
private names that change between releases (``FSDPStrategy`` turns ``auto_wrap_policy`` and
``activation_checkpointing`` into FSDP keyword arguments and policies, ``DeepSpeedStrategy`` folds some forty
arguments into its ``config``, ``precision``/``precision_plugin`` become a plugin that the connector later replaces).
Reading those back would copy half-processed state and guess which of it the user chose; the record is exactly what
the user wrote, and recording changes nothing else about the object.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from lightning.fabric.strategies import DDPStrategy as FabricDDPStrategy
from lightning.fabric.strategies import DeepSpeedStrategy as FabricDeepSpeedStrategy
from lightning.fabric.strategies import FSDPStrategy as FabricFSDPStrategy
from lightning.fabric.strategies import ModelParallelStrategy as FabricModelParallelStrategy
from lightning.pytorch.strategies import DDPStrategy, DeepSpeedStrategy, FSDPStrategy, ModelParallelStrategy

#: The Lightning strategy classes whose construction arguments are kept.
RECORDED_CLASSES: tuple[type, ...] = (
    DDPStrategy,
    FSDPStrategy,
    ModelParallelStrategy,
    DeepSpeedStrategy,
    FabricDDPStrategy,
    FabricFSDPStrategy,
    FabricModelParallelStrategy,
    FabricDeepSpeedStrategy,
)

_ATTRIBUTE = "_lightning_hpu_init_arguments"
_MARKER = "__lightning_hpu_records_arguments__"


def _recording(init: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(init)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> None:
        if _ATTRIBUTE not in self.__dict__:  # the outermost recorded class sees the caller's arguments
            self.__dict__[_ATTRIBUTE] = (args, dict(kwargs))
        init(self, *args, **kwargs)

    setattr(wrapper, _MARKER, init)
    return wrapper


def install() -> None:
    """Keep the construction arguments of every object of :data:`RECORDED_CLASSES` (idempotent)."""
    for strategy_cls in RECORDED_CLASSES:
        init = strategy_cls.__dict__["__init__"]
        if not hasattr(init, _MARKER):
            strategy_cls.__init__ = _recording(init)  # type: ignore[misc]


def init_arguments(strategy: object) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """``(args, kwargs)`` that ``strategy`` was built with, or ``None`` if it was built before :func:`install`."""
    recorded: tuple[tuple[Any, ...], dict[str, Any]] | None = getattr(strategy, "__dict__", {}).get(_ATTRIBUTE)
    return recorded


def named_arguments(strategy: object) -> dict[str, Any] | None:
    """The arguments ``strategy`` was built with, each by its name in its class's ``__init__`` (positional ones too;
    those of a ``**kwargs`` by their own names), or ``None`` if it was built before :func:`install`."""
    recorded = init_arguments(strategy)
    if recorded is None:
        return None
    args, kwargs = recorded
    signature = inspect.signature(type(strategy).__init__)  # the original's: the wrapper is functools.wraps'd
    bound = signature.bind(strategy, *args, **kwargs)
    named: dict[str, Any] = {}
    for name, value in list(bound.arguments.items())[1:]:  # [0] is self
        if signature.parameters[name].kind is inspect.Parameter.VAR_KEYWORD:
            named.update(value)
        else:
            named[name] = value
    return named
