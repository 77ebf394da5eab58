"""Which HPU modules a job may use (``HABANA_VISIBLE_MODULES``) and which one a process is bound to
(``HLS_MODULE_ID``), parsed once for the two packages that read them before any HPU is opened.

The Habana runtime reads these variables itself. lightning_hpu reads them too, to choose each process's HPU before
the bridge opens one (the bridge has no API that tells), and the CPU stand-in reads them as the bridge does. Neither
package may import the other, so the parser sits below both, with nothing but the standard library. A malformed value
raises the class the caller passes (``error``: each package its own), with a sentence naming the variable and the fix.
"""

from __future__ import annotations

import os

__all__ = ["MODULE_ID_ENV", "VISIBLE_MODULES_ENV", "bound_module", "visible_modules"]

#: The bridge's per-process binding: the HPU module this process opens (written by ``initialize_distributed_hpu``).
MODULE_ID_ENV = "HLS_MODULE_ID"
#: The HPU modules a job may use, e.g. ``2,3``; local rank ``r`` binds to the ``r``-th of them.
VISIBLE_MODULES_ENV = "HABANA_VISIBLE_MODULES"


def visible_modules(installed: int, error: type[Exception]) -> list[int]:
    """The module ids this job may use: ``HABANA_VISIBLE_MODULES``, or all ``installed`` modules when it is unset."""
    raw = os.environ.get(VISIBLE_MODULES_ENV, "").strip()
    if not raw:
        return list(range(installed))
    try:
        modules = [int(part) for part in raw.split(",")]
    except ValueError:
        modules = []
    if not modules or any(module < 0 for module in modules) or len(set(modules)) != len(modules):
        raise error(
            f"{VISIBLE_MODULES_ENV}={raw!r} is not a list of HPU module ids: use distinct non-negative integers"
            f" separated by commas, e.g. {VISIBLE_MODULES_ENV}=2,3."
        )
    return modules


def bound_module(error: type[Exception]) -> int | None:
    """The module ``HLS_MODULE_ID`` binds this process to, or ``None`` when it is unset."""
    raw = os.environ.get(MODULE_ID_ENV, "").strip()
    if not raw:
        return None
    if not raw.isdigit():
        raise error(f"{MODULE_ID_ENV}={raw!r} must be an HPU module id such as 0, or unset.")
    return int(raw)
