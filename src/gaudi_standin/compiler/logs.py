"""The bridge's Python loggers (``habana_frameworks.torch.utils.debug.logger.Logger``) on the stand-in.

The bridge's compile backend writes what it did with each graph to two loggers of type ``PT_COMPILE``: the graph
logger of ``compile_backend.passes`` (each HPU graph's TorchScript IR, the placement of each node) and the fallback
logger of ``compile_backend.shared_layer`` (``Node: <name> requires fallback: <True|False>`` for each op). A
``Logger`` keeps its formatted lines in ``data`` only after ``set_store_data(True)``; that is how the bridge's own
tests, and Gaudi users looking for the ops that fall back to the host, read them. The bridge's loggers also print
through its C++ log sink at the levels its logging settings enable; the stand-in has no such sink and prints through
Python's ``logging`` instead (logger ``habana_frameworks.PT_COMPILE``, silent unless the program configures logging
or calls ``utils.debug.logger.enable_logging``), so nothing is formatted unless someone listens.

Line formats are the bridge's: ``[<type>] <message>``, the message formatted with ``{}`` placeholders when the first
argument has them, else with ``%``, else the arguments joined by ``, ``.
"""

from __future__ import annotations

import logging
from typing import Any

# A library's loggers print only where the program configured logging (no last-resort output on stderr).
logging.getLogger("habana_frameworks").addHandler(logging.NullHandler())

#: The bridge's log levels (its ``_debug_C.log_level``), mapped to Python's.
LEVELS = {
    "trace": 5,
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
}


def format_args(args: tuple[Any, ...]) -> str:
    """A log call's arguments as the bridge formats them."""
    if args and isinstance(args[0], str):
        template, values = args[0], args[1:]
        if "{}" in template:
            return template.format(*map(str, values)) if values else ""
        if "%" in template:
            return template % tuple(values)
    return ", ".join(map(str, args))


class Logger:
    """A logger of one type (``PT_COMPILE``, ...) that stores its lines in :attr:`data` when asked to."""

    def __init__(self, type: str) -> None:
        self.type = type
        self.store_data = False
        self.data: list[str] = []
        self._sink = logging.getLogger(f"habana_frameworks.{type.replace(' ', '_')}")

    def log(self, level: int, args: tuple[Any, ...]) -> None:
        """Store and/or emit one line at ``level``; costs one check when nobody listens."""
        enabled = self._sink.isEnabledFor(level)
        if enabled or self.store_data:
            message = f"[{self.type}] {format_args(args)}"
            if enabled:
                self._sink.log(level, message)
            if self.store_data:
                self.data.append(message)

    def trace(self, *args: Any) -> None:
        self.log(LEVELS["trace"], args)

    def debug(self, *args: Any) -> None:
        self.log(LEVELS["debug"], args)

    def info(self, *args: Any) -> None:
        self.log(LEVELS["info"], args)

    def warn(self, *args: Any) -> None:
        self.log(LEVELS["warn"], args)

    def error(self, *args: Any) -> None:
        self.log(LEVELS["error"], args)

    def critical(self, *args: Any) -> None:
        self.log(LEVELS["critical"], args)

    def set_store_data(self, enable: bool) -> None:
        """Start (or stop) keeping lines in :attr:`data`; the lines kept so far are dropped either way."""
        self.store_data = enable
        self.data = []

    def listening(self) -> bool:
        """Whether a line logged now would go anywhere (stored, or emitted at debug level)."""
        return self.store_data or self._sink.isEnabledFor(logging.DEBUG)


def get_compile_backend_logger() -> Logger:
    """A new ``PT_COMPILE`` logger, as the bridge's ``dynamo.debug_utils.logger`` gives each module its own."""
    return Logger("PT_COMPILE")


def get_fx_graph_logger() -> Logger:
    return Logger("PT_COMPILE FX GRAPH")
