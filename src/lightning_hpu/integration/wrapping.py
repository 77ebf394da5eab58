"""How :mod:`lightning_hpu.integration` patches Lightning: wrap a method once, marked, after checking it exists."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import lightning

#: Lightning releases whose internals the patches were written and tested against.
TESTED_LIGHTNING = ("2.6",)

#: The attribute a wrapper carries: the wrapped original (and the sign that a method is patched already).
MARKER = "__lightning_hpu_wrapped__"


class LightningIntegrationError(RuntimeError):
    """Lightning's internals are not what this version of lightning-hpu expects."""


def integration_error(missing: str) -> LightningIntegrationError:
    """The error for a Lightning whose ``missing`` internals (``"Owner lacks name, ..."``) moved."""
    return LightningIntegrationError(
        f"lightning-hpu cannot integrate with Lightning {lightning.__version__}: {missing} (tested with Lightning"
        f" {', '.join(TESTED_LIGHTNING)}); install a tested Lightning release or a newer lightning-hpu."
    )


def check_methods(owner: type, names: tuple[str, ...]) -> None:
    """Refuse, before anything is patched, a Lightning whose ``owner`` lacks one of the methods ``names``."""
    missing = [name for name in names if not callable(getattr(owner, name, None))]
    if missing:
        raise integration_error(f"{owner.__name__} lacks {', '.join(missing)}")


def wrap(owner: type, name: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    """Replace ``owner.name`` by ``make(original)``, marked with :data:`MARKER` (static methods stay static)."""
    original = getattr(owner, name)
    is_static = isinstance(owner.__dict__.get(name), staticmethod)
    wrapper = functools.wraps(original)(make(original))
    setattr(wrapper, MARKER, original)
    setattr(owner, name, staticmethod(wrapper) if is_static else wrapper)
