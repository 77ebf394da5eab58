"""What lightning-hpu does when a Lightning package has been imported in a process that did not import it.

:mod:`lightning_hpu_autoload` (run at every Python start) calls these once ``lightning``, ``pytorch_lightning`` or
``lightning_fabric`` has run, so that ``accelerator="hpu"``, the HPU strategy, precision and profiler names, and
``accelerator="auto"`` picking HPUs where there are any, work exactly as after ``import lightning_hpu``:

* ``lightning``: ``import lightning_hpu``, whose import registers everything with ``lightning.pytorch`` and
  ``lightning.fabric``;
* ``pytorch_lightning`` and ``lightning_fabric``: :mod:`lightning_hpu.standalone` registers its classes, the same
  source built against those packages. ``lightning_fabric`` alone (a Fabric program) registers once
  ``pytorch_lightning`` has run too, when it is installed: the HPU twins of Lightning's strategy objects rebuild
  Trainer and Fabric strategies alike.
"""

from __future__ import annotations

import importlib.util
import sys


def _being_imported(name: str) -> bool:
    """Whether module ``name`` is in ``sys.modules`` but has not finished running (its import is under way)."""
    module = sys.modules.get(name)
    spec = getattr(module, "__spec__", None)
    return module is not None and bool(getattr(spec, "_initializing", False))


def lightning_loaded(name: str) -> None:
    """``lightning`` has run: register with ``lightning.pytorch`` and ``lightning.fabric`` by importing the package."""
    importlib.import_module("lightning_hpu")


def standalone_loaded(name: str) -> None:
    """``pytorch_lightning`` or ``lightning_fabric`` has run: register lightning-hpu's standalone classes with both."""
    if name == "lightning_fabric":
        if "pytorch_lightning" in sys.modules:  # pytorch_lightning is importing it: registered once it has run
            return
        if importlib.util.find_spec("pytorch_lightning") is None:
            raise ImportError(
                "lightning-hpu registers with the standalone lightning_fabric together with pytorch_lightning, which"
                " is not installed: `pip install pytorch-lightning`, or import Fabric from lightning"
            )
        importlib.import_module("pytorch_lightning")  # its own registration follows when it has run
        return
    if _being_imported("lightning_hpu"):
        return
    from lightning_hpu.standalone import register

    register()
