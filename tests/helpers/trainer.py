"""The tests' one quiet Trainer, and what they read of a run (logged metrics, rank-zero lines)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lightning.pytorch import Trainer
from lightning.pytorch.loggers import Logger
from lightning_utilities.core import rank_zero as rank_zero_module

#: What makes a Trainer quiet: no progress bar, no model summary, no logger (a test that reads logs passes its own).
QUIET = {"enable_progress_bar": False, "enable_model_summary": False, "logger": False}


def quiet_trainer_kwargs(root: str | Path | None = None) -> dict[str, Any]:
    """The quiet Trainer's arguments, writing under ``root``: for a Trainer built elsewhere (LightningCLI, Ray)."""
    return {**QUIET, **({"default_root_dir": str(root)} if root is not None else {})}


def quiet_trainer(root: str | Path | None = None, **arguments: Any) -> Trainer:
    """A Trainer that prints nothing a test does not read, writing under ``root``; ``arguments`` win over the quiet
    defaults (``logger=spy``, say)."""
    return Trainer(**{**quiet_trainer_kwargs(root), **arguments})


class MetricsSpy(Logger):
    """A logger that keeps every metrics dict logged to it."""

    def __init__(self) -> None:
        super().__init__()
        self.metrics: list[dict[str, float]] = []

    @property
    def name(self) -> str:
        return "spy"

    @property
    def version(self) -> int:
        return 0

    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        self.metrics.append(dict(metrics))

    def log_hyperparams(self, params: Any, *args: Any, **kwargs: Any) -> None:
        pass


class _RankZeroLines(logging.Handler):
    def __init__(self, prefix: str) -> None:
        super().__init__(logging.INFO)
        self.prefix = prefix
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith(self.prefix):
            self.lines.append(record.getMessage())


@contextlib.contextmanager
def rank_zero_lines(prefix: str = "") -> Iterator[list[str]]:
    """The lines logged at INFO or above through Lightning's rank-zero logger (those starting with ``prefix``)."""
    handler = _RankZeroLines(prefix)
    logger = rank_zero_module.log
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield handler.lines
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
