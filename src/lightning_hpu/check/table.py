"""The table ``lightning-hpu check`` prints as the rows come, and its progress lines (on standard error)."""

from __future__ import annotations

import sys
from typing import TextIO

from lightning_hpu.check.rows import Row

#: Column titles and widths (the last column, time, is right-aligned).
COLUMNS = (("check", 18), ("result", 6), ("figure", 44), ("expected", 44), ("time", 6))
STANDIN_MARK = "*"
STANDIN_NOTE = f"{STANDIN_MARK} measured on the CPU stand-in: the figure says nothing about a Gaudi"


def _cell(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "~"


class Table:
    """Prints a header, then each row as it is given, then a summary line."""

    def __init__(self, out: TextIO | None = None, progress: TextIO | None = None) -> None:
        self._out, self._progress = out, progress
        self.any_standin = False

    @property
    def out(self) -> TextIO:
        """Where the table goes: standard output (as it is when printing) unless given."""
        return self._out or sys.stdout

    @property
    def progress(self) -> TextIO:
        """Where the progress lines go: standard error (as it is when printing) unless given."""
        return self._progress or sys.stderr

    def header(self) -> None:
        self._line([title for title, _ in COLUMNS])
        self._line(["-" * width for _, width in COLUMNS])

    def row(self, row: Row) -> None:
        figure = row.figure + (f" {STANDIN_MARK}" if row.standin and row.figure else "")
        self.any_standin |= row.standin
        self._line([row.name, row.result, figure, row.expected, f"{row.seconds:.1f}s"])
        if row.result == "fail" and row.detail:  # its first line, shortened: the JSON has all of it
            print(f"{'':20}{_cell(row.detail.splitlines()[0], 110)}", file=self.out, flush=True)

    def step(self, index: int, total: int, text: str) -> None:
        """The progress line: which part of the check runs now."""
        print(f"[{index}/{total}] {text} ...", file=self.progress, flush=True)

    def summary(self, rows: list[Row], seconds: float) -> None:
        counts = {result: sum(row.result == result for row in rows) for result in ("pass", "fail", "n/a", "skip")}
        text = ", ".join(f"{count} {result}" for result, count in counts.items() if count)
        if self.any_standin:
            print(STANDIN_NOTE, file=self.out)
        verdict = "FAILED" if counts["fail"] else "passed"
        print(f"lightning-hpu check {verdict}: {text} in {seconds:.1f}s", file=self.out, flush=True)

    def _line(self, cells: list[str]) -> None:
        parts = [_cell(cell, width).ljust(width) for cell, (_, width) in zip(cells[:-1], COLUMNS[:-1], strict=True)]
        print("  ".join([*parts, cells[-1].rjust(COLUMNS[-1][1])]), file=self.out, flush=True)
