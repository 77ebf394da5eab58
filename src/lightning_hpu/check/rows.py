"""One row of ``lightning-hpu check``: what was checked, its result, its figure against the expected range.

Rows travel from the worker processes to the command as JSON lines on their standard output, each marked with
:data:`ROW_MARKER`, so the command prints them as they come and keeps every other line for the failure's detail.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

#: The check groups, in the order they run; ``--only`` and ``--skip`` take these names.
CHECKS = ("devices", "fit", "precision", "multi", "throughput", "checkpoints", "memory")

#: ``pass`` and ``fail`` judge a figure; ``n/a`` is a check this node cannot have (fp8 before Gaudi 2, DeepSpeed not
#: installed, multi-HPU checks on one HPU); ``skip`` one that ``--only``/``--skip`` left out.
Result = Literal["pass", "fail", "n/a", "skip"]
RESULTS: tuple[str, ...] = ("pass", "fail", "n/a", "skip")

#: The prefix of a row's JSON line on a worker's standard output.
ROW_MARKER = "@lightning-hpu-check-row "


@dataclass
class Row:
    """One check's outcome.

    Attributes:
        name: the row's name, ``<check>.<what>`` (``fit.eager``) or the check's name alone (``memory``).
        what: what was checked, in a few words.
        result: see :data:`Result`.
        figure: the measured figure as printed (``"loss 5.61 -> 3.02"``).
        expected: the range the figure must fall in to pass, as printed (``"falls by 10% or more"``).
        seconds: how long the check took.
        value: the figure as a number, where there is one (a loss, GB/s, a fraction), for comparisons across rows.
        standin: the figure was measured on the CPU stand-in, where it says nothing about a Gaudi (bandwidth, MFU).
        detail: why it failed, or what else is worth knowing.
    """

    name: str
    what: str
    result: Result
    figure: str = ""
    expected: str = ""
    seconds: float = 0.0
    value: float | None = None
    standin: bool = False
    detail: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def check(self) -> str:
        """The check group the row belongs to (``fit`` for ``fit.eager``)."""
        return self.name.split(".", 1)[0]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Row:
        return cls(**data)


def verdict(ok: bool) -> Result:
    """``pass`` when ``ok``, else ``fail``."""
    return "pass" if ok else "fail"


def emit(row: Row) -> None:
    """Send ``row`` to the command (from a worker process): one marked JSON line on standard output."""
    sys.stdout.write(ROW_MARKER + json.dumps(row.to_json()) + "\n")
    sys.stdout.flush()


def parse_row(line: str) -> Row | None:
    """The row a worker's output line carries, ``None`` for any other line."""
    start = line.find(ROW_MARKER)
    if start < 0:
        return None
    return Row.from_json(json.loads(line[start + len(ROW_MARKER) :]))
