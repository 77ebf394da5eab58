"""Counts said in grammatical English: "1 HPU is visible", "2 HPUs are visible"."""

from __future__ import annotations


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` with ``noun`` in the right number: ``counted(1, "HPU")`` is ``"1 HPU"``, ``counted(2, "HPU")``
    ``"2 HPUs"``; ``plural`` for a noun that does not take an ``s``."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def are(count: int) -> str:
    """The verb that agrees with ``count``: ``"is"`` for one, ``"are"`` otherwise."""
    return "is" if count == 1 else "are"
