"""The patch that lets ``Trainer(profiler="hpu")`` build an :class:`~lightning_hpu.HPUProfiler`.

Lightning's profiler names still work; a misspelt HPU name is refused naming the one meant, after Lightning's own
message and as an error of Lightning's class for it (:class:`HPUProfilerNameError`).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any

from lightning.pytorch.profilers import Profiler
from lightning.pytorch.trainer import setup as trainer_setup
from lightning.pytorch.utilities.exceptions import MisconfigurationException

from lightning_hpu.integration.wrapping import MARKER, integration_error
from lightning_hpu.runtime import HPUConfigurationError
from lightning_hpu.support.lightning_text import lightning_refusal
from lightning_hpu.support.suggestions import closest_name

#: Profiler names of ``Trainer(profiler=...)`` added to Lightning's, and the class each builds (lazily imported).
HPU_PROFILERS: dict[str, str] = {"hpu": "lightning_hpu.pytorch.profilers:HPUProfiler"}

#: Lightning 2.6's own profiler names (``Trainer(profiler=...)``), against which misspelt HPU names are told apart.
LIGHTNING_PROFILERS = ("simple", "advanced", "pytorch", "xla")


class HPUProfilerNameError(HPUConfigurationError, MisconfigurationException):
    """A misspelt HPU profiler name: Lightning's error for an unknown profiler name, and the package's."""


def check() -> None:
    """Refuse a Lightning that moved ``_init_profiler``, before anything is patched."""
    if not callable(getattr(trainer_setup, "_init_profiler", None)):
        raise integration_error("lightning.pytorch.trainer.setup lacks _init_profiler")


def install() -> None:
    """Let ``Trainer(profiler=...)`` take the names of :data:`HPU_PROFILERS` too."""
    original = trainer_setup._init_profiler

    def init_profiler(trainer: Any, profiler: Profiler | str | None) -> None:
        original(trainer, hpu_profiler(profiler, functools.partial(original, trainer, profiler)))

    setattr(init_profiler, MARKER, original)
    trainer_setup._init_profiler = init_profiler


def hpu_profiler(
    profiler: Profiler | str | None, lightning_check: Callable[[], object] | None = None
) -> Profiler | str | None:
    """The profiler an HPU profiler name builds; other names and objects as given (a misspelt HPU name refused, after
    the message of ``lightning_check``, Lightning's own ``_init_profiler`` of the name)."""
    if isinstance(profiler, str) and profiler.lower() in HPU_PROFILERS:
        module_name, class_name = HPU_PROFILERS[profiler.lower()].split(":")
        built: Profiler = getattr(importlib.import_module(module_name), class_name)()
        return built
    if isinstance(profiler, str) and profiler.lower() not in LIGHTNING_PROFILERS:
        guess = closest_name(profiler, [*LIGHTNING_PROFILERS, *HPU_PROFILERS])
        if guess in HPU_PROFILERS:
            lightning_message = lightning_refusal(lightning_check, MisconfigurationException) if lightning_check else ""
            raise HPUProfilerNameError(
                f"{lightning_message}`Trainer(profiler={profiler!r})` is not a profiler name: did you mean {guess!r}?"
            )
    return profiler
