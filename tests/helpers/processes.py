"""Whether a test's child process still runs, read from ``/proc`` (shared by the launcher and SIGTERM tests)."""

from __future__ import annotations

from pathlib import Path


def alive(pid: int) -> bool:
    """Whether ``pid`` runs: it exists and is not a zombie. A process that is gone, or is reaped while its state is
    read (the read then fails with ``ESRCH``), is not alive."""
    try:
        # The state follows the command name, which is in parentheses and may itself hold spaces or parentheses.
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"
