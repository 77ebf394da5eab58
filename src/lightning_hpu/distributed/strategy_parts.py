"""What every HPU strategy (Trainer and Fabric) uses around the steps, written once below both trees: ``mark_step``
placement, the checkpoint IO default, and the precision plugin attribute of the strategies whose plugin must be
their own."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from lightning.fabric.plugins.io.checkpoint_io import CheckpointIO

from lightning_hpu.checkpoint.io import HPUCheckpointIO
from lightning_hpu.runtime import require_backend

_T = TypeVar("_T")
_P = TypeVar("_P")


def mark_step() -> None:
    """Flush the lazy graph of the active backend (a no-op in eager mode)."""
    require_backend().mark_step()


def between_mark_steps(step: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
    """Run a step as a graph of its own: a step is marked before and after it."""
    mark_step()
    output = step(*args, **kwargs)
    mark_step()
    return output


def with_hpu_checkpoint_io(io: CheckpointIO | None) -> CheckpointIO:
    """``io``, with :class:`HPUCheckpointIO` where it is missing: as the default, and inside a wrapper (an IO with a
    ``checkpoint_io`` attribute, such as the Trainer's ``AsyncCheckpointIO()``) that was given no IO to wrap."""
    if io is None:
        return HPUCheckpointIO()
    if getattr(io, "checkpoint_io", HPUCheckpointIO) is None:
        io.checkpoint_io = HPUCheckpointIO()  # type: ignore[attr-defined]  # a wrapper, as checked
    return io


class HPUCheckpointIOAttribute:
    """A strategy's ``checkpoint_io`` (Trainer and Fabric): the IO set, with :func:`with_hpu_checkpoint_io`'s
    :class:`HPUCheckpointIO` where it is missing. Written once, in place of Lightning's property."""

    def __get__(self, strategy: Any, strategy_class: type | None = None) -> CheckpointIO:
        strategy._checkpoint_io = with_hpu_checkpoint_io(strategy._checkpoint_io)
        io: CheckpointIO = strategy._checkpoint_io
        return io

    def __set__(self, strategy: Any, io: CheckpointIO | None) -> None:
        strategy._checkpoint_io = io


class PrecisionPluginAttribute(Generic[_P]):
    """A strategy's precision plugin attribute (``precision`` in Fabric, ``precision_plugin`` in the Trainer) that
    holds only ``plugin_type``: ``plugin_type("32-true")`` until one is set, and a clear error for another type.

    Written once for both sides' strategies whose precision must be their own (FSDP's mixed precision), in place of
    Lightning's property, which would accept any plugin of its base type.
    """

    def __init__(self, plugin_type: type[_P], owner: str) -> None:
        self.plugin_type = plugin_type
        self.owner = owner  # "Trainer" or "Fabric": what the error message tells the user to pass
        self.name = ""
        self.strategy_class = ""

    def __set_name__(self, strategy_class: type, name: str) -> None:
        self.name, self.strategy_class = name, strategy_class.__name__

    def __get__(self, strategy: Any, strategy_class: type | None = None) -> _P:
        plugin = getattr(strategy, f"_{self.name}")
        if plugin is None:
            plugin = self.plugin_type("32-true")  # type: ignore[call-arg]  # every HPU precision plugin takes it
            setattr(strategy, f"_{self.name}", plugin)
        if not isinstance(plugin, self.plugin_type):
            raise TypeError(f"{self._needs()}, got {type(plugin).__name__}.")
        return plugin

    def __set__(self, strategy: Any, plugin: object) -> None:
        if plugin is not None and not isinstance(plugin, self.plugin_type):
            raise TypeError(
                f"{self._needs()}, got {type(plugin).__name__}; pass {self.owner}(precision=...) or"
                f" plugins=[{self.plugin_type.__name__}(...)]."
            )
        setattr(strategy, f"_{self.name}", plugin)

    def _needs(self) -> str:
        return f"{self.strategy_class} needs an {self.plugin_type.__name__}"


__all__ = [
    "HPUCheckpointIOAttribute",
    "PrecisionPluginAttribute",
    "between_mark_steps",
    "mark_step",
    "with_hpu_checkpoint_io",
]
