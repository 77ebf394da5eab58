"""The arguments a Lightning strategy object was built with, so that it can be rebuilt as its HPU twin.

Ray's ``RayDDPStrategy(...)``, ``RayFSDPStrategy(...)`` and ``RayDeepSpeedStrategy(...)`` pass their arguments on
to Lightning's ``DDPStrategy``, ``FSDPStrategy`` and ``DeepSpeedStrategy`` unchanged. :func:`install` makes those
three ``__init__`` methods keep the arguments on the object; :func:`init_arguments` returns them, and the HPU twin
is built from them with its own ``__init__`` (its HCCL defaults and checks), not by copying state.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from lightning.pytorch.strategies import DDPStrategy, DeepSpeedStrategy, FSDPStrategy

#: The Lightning strategy classes whose construction arguments are kept.
RECORDED_CLASSES: tuple[type, ...] = (DDPStrategy, FSDPStrategy, DeepSpeedStrategy)

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
