"""Loading the stand-in's device library while ``import torch`` runs, before ``torch._C`` initialises, on CUDA builds.

PyPI's Linux builds of torch are CUDA builds (they run without a GPU). torch accepts one compiled-in accelerator,
and on a CUDA build that is CUDA, unless other CUDA hooks are registered before ``torch._C`` creates its own, once,
while it initialises: the device library's ``hpu_cuda_hooks.cpp`` registers hooks that say "CUDA is not built", so
that ``hpu`` is the accelerator, as on a CPU build (autograd asks the accelerator for the streams of hpu tensors).
The ``torch.backends`` entry point (:mod:`.autoload`) runs too late for that, so
:func:`.import_hook.install_if_requested` puts :class:`TorchCFinder` first on ``sys.meta_path`` when torch is not
yet imported: when torch imports ``torch._C`` it loads torch's own library (whose CUDA hooks must be registered
first) and then the built device library. Only on a CUDA build and only when a library built for this torch exists;
it never raises (``import torch`` must not fail because of the stand-in). CUDA is off in such a process.

This module imports only the standard library.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # ``typing`` would add to every start-up of a stand-in process
if TYPE_CHECKING:
    import importlib.machinery
    from collections.abc import Sequence
    from types import ModuleType

TORCH_EXTENSION = "torch._C"
AUTOLOAD_ENV = "TORCH_DEVICE_BACKEND_AUTOLOAD"


class TorchCFinder:
    """First on ``sys.meta_path``: loads the device library when ``torch._C`` is about to be imported, and finds
    nothing itself (it stays on the list: removing a finder while the import system walks the list skips the next)."""

    def __init__(self) -> None:
        self.triggered = False

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == TORCH_EXTENSION and not self.triggered:
            self.triggered = True
            load_before_torch_c()
        return None


def install() -> None:
    """Put :class:`TorchCFinder` first on ``sys.meta_path`` unless torch is imported already (then it is too late)."""
    if "torch" in sys.modules or any(isinstance(finder, TorchCFinder) for finder in sys.meta_path):
        return
    sys.meta_path.insert(0, TorchCFinder())


def is_cuda_build() -> bool:
    """Whether the torch being imported is a CUDA build (``torch.version`` is imported before ``torch._C``)."""
    return getattr(sys.modules.get("torch.version"), "cuda", None) is not None


def load_before_torch_c() -> bool:
    """Load torch's ``libtorch.so`` and then the built device library; return whether the library was loaded."""
    try:
        torch = sys.modules.get("torch")
        if torch is None or torch.__file__ is None or not is_cuda_build():
            return False
        if os.environ.get(AUTOLOAD_ENV, "1") != "1":
            return False  # torch's switch for loading device backends while it imports, which this is too
        from gaudi_standin.startup.device_cache import built_library

        # torch._C (which knows torch's C++ ABI flag) is not there yet: PyPI's builds use the new ABI.
        library = built_library(torch.__version__, True) or built_library(torch.__version__, False)
        if library is None:
            return False  # built later, in this process: too late (gaudi_standin.device.library says so)
        import ctypes
        from pathlib import Path

        ctypes.CDLL(str(Path(torch.__file__).parent / "lib" / "libtorch.so"))  # torch's CUDA hooks register first
        ctypes.CDLL(str(library))
        return True
    except Exception as error:  # torch then imports as usual; the device library reports what it can at first use
        print(f"lightning-hpu: the stand-in's device did not load before torch._C ({error}).", file=sys.stderr)
        return False
