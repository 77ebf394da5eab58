"""Building, caching and loading the C++ library that makes torch's ``hpu`` device real on the CPU stand-in.

The library (``csrc/``) is compiled once per torch build, on first use, with torch's own extension builder, and
cached under ``$LIGHTNING_HPU_EXTENSIONS_DIR`` (default: ``<Python prefix>/var/lightning_hpu``, inside the virtual
environment, or ``~/.cache/lightning_hpu`` when the prefix is not writable). A cached start only loads the shared
object. It is never built or loaded next to the Intel Gaudi bridge, which registers the HPU device itself.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from pathlib import Path

import torch

import gaudi_standin.startup.autoload
import gaudi_standin.startup.import_hook

EXTENSIONS_DIR_ENV = gaudi_standin.startup.autoload.EXTENSIONS_DIR_ENV
LIBRARY_NAME = gaudi_standin.startup.autoload.LIBRARY_NAME
_CSRC = gaudi_standin.startup.autoload.CSRC
_SOURCES = gaudi_standin.startup.autoload.SOURCES
_CFLAGS = gaudi_standin.startup.autoload.CFLAGS
_READY = gaudi_standin.startup.autoload.READY

_lock = threading.Lock()
_loaded = False


class DeviceLibraryError(RuntimeError):
    """The stand-in's device library cannot be built or loaded here (the message says what to do)."""


def _fingerprint() -> str:
    return gaudi_standin.startup.autoload.fingerprint(torch.__version__, bool(torch._C._GLIBCXX_USE_CXX11_ABI))


def cache_root() -> Path:
    """Where built libraries are kept (one folder per torch build and source version)."""
    return gaudi_standin.startup.autoload.cache_root()


def build_directory() -> Path:
    """The folder of the library for this torch build (a changed source rebuilds there, incrementally)."""
    return gaudi_standin.startup.autoload.build_directory(torch.__version__)


def _refuse_next_to_bridge() -> None:
    if gaudi_standin.startup.import_hook.real_bridge_findable():
        raise DeviceLibraryError(
            "The Intel Gaudi bridge (habana_frameworks) is installed here, and it provides the HPU device itself;"
            " unset LIGHTNING_HPU_BACKEND to use the Gaudi, or run the CPU stand-in in an environment without the"
            " bridge."
        )


def _build(directory: Path) -> None:
    compiler = os.environ.get("CXX") or "c++"
    if shutil.which(compiler) is None:
        raise DeviceLibraryError(
            f"The CPU stand-in compiles a small C++ library for its hpu device on first use, but no C++ compiler"
            f" ({compiler}) is on PATH: install one (Debian/Ubuntu: apt-get install g++; macOS: xcode-select"
            f" --install) and run again."
        )
    from torch.utils.cpp_extension import load

    directory.mkdir(parents=True, exist_ok=True)
    print(
        f"lightning-hpu: building the CPU stand-in's hpu device for torch {torch.__version__} (once per torch"
        f" version, under a minute) in {directory} ...",
        file=sys.stderr,
        flush=True,
    )
    started = time.monotonic()
    try:
        load(
            name=LIBRARY_NAME,
            sources=[str(_CSRC / source) for source in _SOURCES],
            extra_cflags=list(_CFLAGS),
            build_directory=str(directory),
            is_python_module=False,
            verbose=False,
        )
    except Exception as error:
        errors = [line.strip() for line in str(error).splitlines() if "error" in line.lower()][:5]
        raise DeviceLibraryError(
            f"Building the CPU stand-in's hpu device in {directory} failed: {' | '.join(errors) or error}; point"
            f" {EXTENSIONS_DIR_ENV} at an empty folder and run again, or report these lines."
        ) from None
    ready = directory / _READY
    temporary = directory / f".{_READY}.{os.getpid()}"
    temporary.write_text(_fingerprint())
    temporary.replace(ready)
    print(f"lightning-hpu: built in {time.monotonic() - started:.0f} s.", file=sys.stderr, flush=True)


def load_device_library(require_accelerator: bool = True) -> None:
    """Make ``torch.device("hpu")`` a device of the stand-in in this process (builds the library if needed).

    ``require_accelerator=False`` (``python -m gaudi_standin.device``, which only builds) skips the check that hpu
    is torch's accelerator here."""
    global _loaded
    with _lock:
        if _loaded:
            return
        _refuse_next_to_bridge()
        shared_object = gaudi_standin.startup.autoload.built_library(
            torch.__version__, bool(torch._C._GLIBCXX_USE_CXX11_ABI)
        )
        if shared_object is not None:
            torch.ops.load_library(str(shared_object))  # a no-op when torch's start-up already loaded it
        else:
            _build(build_directory())  # torch's builder loads what it built
        if require_accelerator:
            _check_accelerator()
        _loaded = True


def _check_accelerator() -> None:
    """torch fixes its accelerator once per process; autograd fails on hpu tensors unless it is hpu."""
    if not hasattr(torch, "accelerator"):
        return
    accelerator = torch.accelerator.current_accelerator()
    if accelerator is not None and accelerator.type == "hpu":
        return
    if accelerator is not None and accelerator.type == "cuda":
        raise DeviceLibraryError(
            f"This torch ({torch.__version__}) is a CUDA build, and the CPU stand-in's hpu device loaded only after"
            " torch had made CUDA its accelerator in this process (torch was imported before"
            " LIGHTNING_HPU_BACKEND=cpu was set, the device was built only now, or TORCH_DEVICE_BACKEND_AUTOLOAD=0),"
            " so autograd cannot use hpu"
            " tensors: build the device once (python -m gaudi_standin.device) and set LIGHTNING_HPU_BACKEND=cpu"
            " before Python starts, so that the device loads before torch's CUDA."
        )
    if accelerator is not None:
        return  # another accelerator of torch's own build: its hooks are not the stand-in's to replace
    raise DeviceLibraryError(
        "torch settled on having no accelerator in this process before the stand-in's hpu device loaded (a"
        " backward pass or a torch.accelerator call ran first), so autograd cannot use hpu tensors: set"
        " LIGHTNING_HPU_BACKEND=cpu before Python starts, with lightning-hpu installed by pip and its device"
        " built (scripts/setup.sh), so that the device loads with torch."
    )


def is_loaded() -> bool:
    """Whether this process has the stand-in's hpu device."""
    return _loaded
