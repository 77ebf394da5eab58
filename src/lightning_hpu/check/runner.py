"""Running one check: its time, and an exception turned into a failed row with one line of detail."""

from __future__ import annotations

import time
from collections.abc import Callable

from lightning_hpu.check.rows import Row


def run_row(name: str, what: str, body: Callable[[], Row]) -> Row:
    """``body()``'s row, timed; a failed row naming the exception when ``body`` raises."""
    start = time.perf_counter()
    try:
        row = body()
    except Exception as error:  # a broken node raises anything: the row says what, the other checks go on
        row = Row(
            name, what, "fail", detail=f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
        )
    row.seconds = round(time.perf_counter() - start, 3)
    return row
