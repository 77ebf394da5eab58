"""Did-you-mean hints for misspelt names: the closest known name, found with :mod:`difflib`."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest_name(given: str, known: Iterable[str]) -> str | None:
    """The known name closest to ``given`` (case-insensitive), or ``None`` when none is close enough."""
    by_lower = {name.lower(): name for name in known}
    matches = difflib.get_close_matches(given.strip().lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[matches[0]] if matches else None


def hpu_names(known: Iterable[str]) -> list[str]:
    """The names that belong to lightning-hpu (``hpu`` and the ``hpu_*`` names), in their given order."""
    return [name for name in known if name == "hpu" or name.startswith("hpu_")]
