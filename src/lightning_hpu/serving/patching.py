"""How :mod:`lightning_hpu.serving` patches LitServe and LitGPT: wrap a method once, marked, after checking that every
method it needs exists (a release that moved them is refused with one sentence, which the import hook turns into a
warning: the library then works as without lightning-hpu)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

#: The attribute a wrapper carries: the wrapped original (and the sign that a method is patched already).
MARKER = "__lightning_hpu_wrapped__"


class ServingIntegrationError(RuntimeError):
    """A serving library's internals are not what this version of lightning-hpu expects."""


def check_methods(library: str, version: str, owner: Any, names: tuple[str, ...]) -> None:
    """Refuse, before anything is patched, a ``library`` whose ``owner`` lacks one of the callables ``names``."""
    missing = [name for name in names if not callable(getattr(owner, name, None))]
    if missing:
        raise ServingIntegrationError(
            f"lightning-hpu cannot run {library} {version} on HPUs: {getattr(owner, '__name__', owner)} lacks"
            f" {', '.join(missing)}; install the {library} release lightning-hpu names in its `serve` extra."
        )


def wrap(owner: Any, name: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    """Replace ``owner.name`` by ``make(original)``, marked with :data:`MARKER`; nothing happens if it is already.
    A class method stays one: ``make`` gets its function, which takes the class first."""
    attribute = vars(owner).get(name) if isinstance(owner, type) else None
    is_classmethod = isinstance(attribute, classmethod)
    original = attribute.__func__ if isinstance(attribute, classmethod) else getattr(owner, name)
    if hasattr(original, MARKER):
        return
    wrapper = functools.wraps(original)(make(original))
    setattr(wrapper, MARKER, original)
    setattr(owner, name, classmethod(wrapper) if is_classmethod else wrapper)
