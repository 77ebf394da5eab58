"""Where the CPU stand-in's hpu device library is built and cached, and its loading when torch starts.

torch calls :func:`autoload` while ``import torch`` runs (the ``torch.backends`` entry point that out-of-tree device
backends use; ``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` turns it off), as the Intel Gaudi bridge loads itself on a Gaudi.
torch settles once per process which accelerator it has, the first time anything asks (a backward pass does), so
the device must be there before any tensor work: a script that runs a CPU backward pass before it creates its
``Trainer`` would otherwise find ``hpu`` unusable for autograd.

:func:`autoload` only loads a library that is already built for this torch and these sources (``scripts/setup.sh``
or ``python -m gaudi_standin.device`` build it; a first use builds it otherwise), only when
``LIGHTNING_HPU_BACKEND=cpu`` chose the stand-in, never next to a real bridge, and it never raises: ``import torch``
must not fail because of the stand-in. It also installs the emulation's import hook
(:func:`gaudi_standin.startup.install_if_requested`), for a script that chose the stand-in only after Python started.
This module imports only the standard library (and torch, when called).
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

EXTENSIONS_DIR_ENV = "LIGHTNING_HPU_EXTENSIONS_DIR"
LIBRARY_NAME = "lightning_hpu_standin_device"
CSRC = Path(__file__).parent / "device" / "csrc"
SOURCES = ("hpu_device.cpp", "hpu_kernels.cpp", "hpu_autocast.cpp", "hpu_streams.cpp")
CFLAGS = ("-O2",)
READY = "ready"


def fingerprint(torch_version: str, cxx11_abi: bool) -> str:
    """What the built library depends on: its sources, the flags, torch's build and the Python ABI."""
    digest = hashlib.sha256()
    for name in sorted(path.name for path in CSRC.iterdir()):
        digest.update(name.encode())
        digest.update((CSRC / name).read_bytes())
    digest.update(" ".join(CFLAGS).encode())
    digest.update(torch_version.encode())
    digest.update(str(cxx11_abi).encode())
    digest.update(sys.implementation.cache_tag.encode())
    return digest.hexdigest()[:16]


def _writable(path: Path) -> bool:
    probe = path
    while not probe.exists():
        if probe.parent == probe:
            return False
        probe = probe.parent
    return os.access(probe, os.W_OK)


def cache_root() -> Path:
    """Where built libraries are kept (one folder per torch build and source version)."""
    configured = os.environ.get(EXTENSIONS_DIR_ENV, "").strip()
    if configured:
        return Path(configured).expanduser()
    in_prefix = Path(sys.prefix) / "var" / "lightning_hpu"
    return in_prefix if _writable(in_prefix) else Path.home() / ".cache" / "lightning_hpu"


def build_directory(torch_version: str) -> Path:
    """The folder of the library for this torch build (a changed source rebuilds there, incrementally)."""
    return cache_root() / f"torch-{torch_version.replace('+', '_')}-{sys.implementation.cache_tag}"


def built_library(torch_version: str, cxx11_abi: bool) -> Path | None:
    """The shared object built for this torch and these sources, or ``None`` if it must be (re)built."""
    directory = build_directory(torch_version)
    shared_object = directory / f"{LIBRARY_NAME}.so"
    ready = directory / READY
    if ready.exists() and shared_object.exists() and ready.read_text() == fingerprint(torch_version, cxx11_abi):
        return shared_object
    return None


def autoload() -> None:
    """torch's ``torch.backends`` entry point: load the built device library when the stand-in was chosen."""
    if os.environ.get("LIGHTNING_HPU_BACKEND", "").strip().lower() != "cpu":
        return
    try:
        from gaudi_standin import startup

        if not startup.install_if_requested():
            return  # a real bridge is findable: it is the one torch loads
        torch = sys.modules["torch"]  # being imported: this runs at the end of torch/__init__.py
        library = built_library(torch.__version__, bool(torch._C._GLIBCXX_USE_CXX11_ABI))
        if library is not None:
            torch.ops.load_library(str(library))
            # torch now has an hpu accelerator, and asks for its module (torch.hpu) by attribute: import it then,
            # through the emulation's finder, as torch does for its own lazy modules (not now: torch is importing).
            lazy_modules = getattr(torch, "_lazy_modules", None)
            if isinstance(lazy_modules, set):
                lazy_modules.add("hpu")
    except Exception as error:  # the regular loading path reports problems in full, later
        print(f"lightning-hpu: the stand-in's device did not load with torch ({error}).", file=sys.stderr)
