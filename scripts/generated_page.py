"""The command line both page generators share (``error_catalogue.py``, ``examples_gallery.py``): write the page, or
with ``--check`` exit 1 when the page is not what the generator renders now (tests/docs/test_docs.py runs the
checks)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def write_or_check(description: str, page: Path, render: Callable[[], str], check_help: str) -> int:
    """Run the command line of the generator ``description`` names (``render()``: the page); the exit status."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help=check_help)
    arguments = parser.parse_args()
    text = render()
    command = f"python scripts/{Path(sys.argv[0]).name}"
    if arguments.check:
        if not page.exists() or page.read_text() != text:
            print(f"{page.relative_to(ROOT)} is out of date: run {command}", file=sys.stderr)
            return 1
        return 0
    page.write_text(text)
    print(f"wrote {page.relative_to(ROOT)}")
    return 0
