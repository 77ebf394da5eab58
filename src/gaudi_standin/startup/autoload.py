"""The loading of the CPU stand-in's hpu device library when torch starts (where it is kept: :mod:`.device_cache`).

torch calls :func:`autoload` while ``import torch`` runs (the ``torch.backends`` entry point that out-of-tree device
backends use; ``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` turns it off), as the Intel Gaudi bridge loads itself on a Gaudi.
torch settles once per process which accelerator it has, the first time anything asks (a backward pass does), so
the device must be there before any tensor work: a script that runs a CPU backward pass before it creates its
``Trainer`` would otherwise find ``hpu`` unusable for autograd.

:func:`autoload` only loads a library that is already built for this torch and these sources (``scripts/setup.sh``
or ``python -m gaudi_standin.device`` build it; a first use builds it otherwise), only when
``LIGHTNING_HPU_BACKEND=cpu`` chose the stand-in, never next to a real bridge, and it never raises: ``import torch``
must not fail because of the stand-in. It also installs the emulation's import hook
(:func:`gaudi_standin.startup.import_hook.install_if_requested`), for a script that chose the stand-in only after
Python started.
This module imports only the standard library (and torch, when called).
"""

from __future__ import annotations

import os
import sys
from typing import Any

from gaudi_standin.startup.device_cache import (
    CFLAGS,
    CSRC,
    EXTENSIONS_DIR_ENV,
    LIBRARY_NAME,
    READY,
    build_directory,
    built_library,
    cache_root,
    fingerprint,
)

__all__ = [
    "CFLAGS",
    "CSRC",
    "EXTENSIONS_DIR_ENV",
    "LIBRARY_NAME",
    "READY",
    "SOURCES",
    "autoload",
    "build_directory",
    "built_library",
    "cache_root",
    "fingerprint",
]

DEVICES_ENV = "LIGHTNING_HPU_CPU_DEVICES"
MAX_DEVICES = 64  # kMaxDevices of hpu_device.cpp

#: What the compiler is given: one translation unit that includes the parts (``csrc/hpu_library.cpp`` says why).
SOURCES = ("hpu_library.cpp",)


def autoload() -> None:
    """torch's ``torch.backends`` entry point: load the built device library when the stand-in was chosen."""
    if os.environ.get("LIGHTNING_HPU_BACKEND", "").strip().lower() != "cpu":
        return
    try:
        from gaudi_standin.startup import import_hook

        if not import_hook.install_if_requested():
            return  # a real bridge is findable: it is the one torch loads
        torch = sys.modules["torch"]  # being imported: this runs at the end of torch/__init__.py
        library = built_library(torch.__version__, bool(torch._C._GLIBCXX_USE_CXX11_ABI))
        if library is not None:
            torch.ops.load_library(str(library))
            _device_count_from_environment(torch)
            # torch now has an hpu accelerator, and asks for its module (torch.hpu) by attribute: import it then,
            # through the emulation's finder, as torch does for its own lazy modules (not now: torch is importing).
            lazy_modules = getattr(torch, "_lazy_modules", None)
            if isinstance(lazy_modules, set):
                lazy_modules.add("hpu")
    except Exception as error:  # the regular loading path reports problems in full, later
        print(f"lightning-hpu: the stand-in's device did not load with torch ({error}).", file=sys.stderr)


def _device_count_from_environment(torch: Any) -> None:
    """Sets the library's device count from ``LIGHTNING_HPU_CPU_DEVICES`` (when valid; it is checked later).

    A library loaded before this process's environment was there (the test suite's preloaded interpreter loads it
    before it forks, on a CUDA build of torch) read another count when it loaded; torch's autograd engine sizes its
    device queues by the count at the first backward pass, which may come before the stand-in's runtime sets it.
    """
    raw = os.environ.get(DEVICES_ENV, "").strip()
    if raw.isdigit() and 1 <= int(raw) <= MAX_DEVICES:
        torch.ops.lightning_hpu_standin.set_device_count(int(raw))
