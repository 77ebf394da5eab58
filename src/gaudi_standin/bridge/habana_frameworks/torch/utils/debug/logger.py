"""``habana_frameworks.torch.utils.debug.logger`` on the stand-in: the bridge's ``Logger`` and its helpers.

``Logger(type)`` keeps its ``[type] message`` lines in ``data`` after ``set_store_data(True)``
(:mod:`gaudi_standin.compiler.logs`); ``enable_logging(name, level)`` turns on the printing of one logger type at one
of the bridge's levels (``"trace"`` ... ``"critical"``), through Python's ``logging`` on the stand-in.
"""

from __future__ import annotations

import logging

from gaudi_standin.compiler.logs import LEVELS, Logger, format_args

__all__ = ["Logger", "enable_logging", "format_args", "get_log_level"]


def get_log_level(logger_level: str) -> int:
    """The level of the bridge's name ``logger_level``; any other name is refused, as the bridge asserts."""
    assert logger_level in LEVELS, f"unsupported logger_level = {logger_level}"
    return LEVELS[logger_level]


def enable_logging(logger_name: str, logger_level: str) -> None:
    """Print the lines of the loggers of type ``logger_name`` from ``logger_level`` up."""
    logging.getLogger(f"habana_frameworks.{logger_name.replace(' ', '_')}").setLevel(get_log_level(logger_level))
