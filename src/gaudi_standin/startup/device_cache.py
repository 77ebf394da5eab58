"""Where the CPU stand-in's built hpu device library is kept, and whether one is built for a given torch.

Shared by the loading at torch's start (:mod:`.autoload`, :mod:`.early_load`) and the builder
(:mod:`gaudi_standin.device.library`). This module imports only the standard library.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

EXTENSIONS_DIR_ENV = "LIGHTNING_HPU_EXTENSIONS_DIR"
LIBRARY_NAME = "lightning_hpu_standin_device"
CSRC = Path(__file__).parents[1] / "device" / "csrc"
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
