"""Where HPUProfiler writes: ``dirpath`` checked before any step runs, and the written files named afterwards."""

from __future__ import annotations

import os
from pathlib import Path


def check_dirpath(dirpath: str | os.PathLike[str] | None) -> None:
    """Refuse a local ``dirpath`` that can never hold the report and traces: a file, or a path through a file.

    Remote paths (``s3://``, ...) are left to Lightning's file system layer.
    """
    if dirpath is None or "://" in str(dirpath):
        return
    path = Path(dirpath)
    existing = next((p for p in (path, *path.parents) if p.exists()), None)
    if existing is None or existing.is_dir():
        if existing is not None and not os.access(existing, os.W_OK | os.X_OK):
            raise ValueError(
                f"HPUProfiler(dirpath={str(dirpath)!r}): {str(existing)!r} is not writable; pass a `dirpath` you can"
                " write to."
            )
        return
    where = "is a file" if existing == path else f"lies under the file {str(existing)!r}"
    raise ValueError(
        f"HPUProfiler(dirpath={str(dirpath)!r}): the path {where}, so reports and traces cannot be written there;"
        " pass a directory (it is created if missing)."
    )


def written_traces(dirpath: str | os.PathLike[str], prefix: str) -> list[Path]:
    """The Chrome-trace files of one report: ``<prefix>-<action>.<timestamp>.pt.trace.json`` in ``dirpath``."""
    return sorted(Path(dirpath).glob(f"{prefix}-*.pt.trace.json"))
