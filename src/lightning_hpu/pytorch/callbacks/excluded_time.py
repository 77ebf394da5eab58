"""Time spent logging and saving checkpoints, taken out of the training clock of a throughput monitor.

optimum-habana's ``adjust_throughput`` leaves the time of logging, evaluation and saving out of its throughput.
Lightning's ``ThroughputMonitor`` already leaves validation out; this times the loggers' ``log_metrics``/``save`` and
``trainer.save_checkpoint`` and moves the start of the training clock forward by what they took.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

import lightning.pytorch as pl


class ExcludedTime:
    """Wraps the trainer's loggers and ``save_checkpoint``; each call's duration is passed to ``exclude``."""

    def __init__(self, exclude: Callable[[float], None]) -> None:
        self._exclude = exclude
        self._patched: list[tuple[Any, str]] = []
        #: Seconds left out so far.
        self.seconds = 0.0

    def install(self, trainer: pl.Trainer) -> None:
        targets: list[tuple[Any, str]] = [(trainer, "save_checkpoint")]
        for logger in trainer.loggers:
            targets += [(logger, "log_metrics"), (logger, "save")]
        for owner, name in targets:
            if name not in vars(owner):  # not already wrapped by this monitor
                setattr(owner, name, self._timed(getattr(owner, name)))
                self._patched.append((owner, name))

    def uninstall(self) -> None:
        for owner, name in self._patched:
            delattr(owner, name)  # the class's method shows again
        self._patched.clear()

    def _timed(self, method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                elapsed = time.perf_counter() - start
                self.seconds += elapsed
                self._exclude(elapsed)

        return timed
