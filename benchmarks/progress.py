"""Progress lines for benchmarks that run for minutes: what runs now, on stderr, so the results on stdout stay clean."""

from __future__ import annotations

import os
import sys
import time


def progress(message: str) -> None:
    """Print ``[HH:MM:SS] message`` on stderr at once (only in the launching process of a multi-process run)."""
    if os.environ.get("LOCAL_RANK", "0") != "0":
        return
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)
