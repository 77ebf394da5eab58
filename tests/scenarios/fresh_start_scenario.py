"""A user's program from its first line: a fresh Python (``LIGHTNING_HPU_BACKEND=cpu``, nothing of lightning-hpu set
up or imported) that imports Lightning, then checks, in this order, what several test files ask of such a start.

``python fresh_start_scenario.py`` prints one JSON line, ``{section: facts}`` (a section that raised holds
``{"error": traceback}``), then ``done``, and exits with its watchdogs still watching. ``tests/helpers/fresh_start.py``
runs it once for all of them: each start-up costs a core ~7 s (torch and Lightning), and one start serves them all.

- ``import_is_cheap`` (runtime/test_backend.py): importing Lightning registers lightning-hpu, but creates no
  backend, imports no bridge, starts no process. First, before anything asks for an HPU.
- ``no_import`` (standalone/test_namespaces.py): every Lightning package knows ``hpu`` with no ``import
  lightning_hpu`` in the program.
- ``faked_versions`` (support/test_versions.py): with torch 2.7 and Lightning 2.5 the package warns, once.
- ``watchdogs`` (distributed/test_rank_watchdog.py): two rank watchdogs polling without pause when the
  interpreter shuts down; the process must still exit cleanly (status 0, no "terminate called").
"""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Callable
from typing import Any

import lightning.pytorch  # noqa: F401 - the program's first import: lightning-hpu registers here, or nowhere

IMPORTED_BY_LIGHTNING = "lightning_hpu" in sys.modules


def import_is_cheap() -> dict[str, Any]:
    import subprocess

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("subprocess started at import")

    popen_init = subprocess.Popen.__init__
    subprocess.Popen.__init__ = refuse  # type: ignore[method-assign]
    try:
        from lightning.pytorch.accelerators import AcceleratorRegistry

        import lightning_hpu  # noqa: F401
        import lightning_hpu.runtime as rt

        return {
            "bridge_imported": "habana_frameworks" in sys.modules,
            "backend_created": rt._backend is not None,
            "registered": "hpu" in AcceleratorRegistry,
        }
    finally:
        subprocess.Popen.__init__ = popen_init  # type: ignore[method-assign]


def no_import() -> dict[str, Any]:
    import lightning as L
    import pytorch_lightning as pl
    from lightning.pytorch.demos.boring_classes import BoringModel
    from lightning_fabric import Fabric

    seen: dict[str, Any] = {"imported_by_lightning": IMPORTED_BY_LIGHTNING}
    quiet: dict[str, Any] = dict(
        logger=False, enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False
    )
    trainer = L.Trainer(accelerator="hpu", devices=1, max_steps=2, **quiet)
    trainer.fit(BoringModel())
    seen["lightning"] = [type(trainer.accelerator).__module__, type(trainer.strategy).__name__]
    seen["lightning_auto"] = type(L.Trainer(**quiet).accelerator).__module__
    standalone_trainer = pl.Trainer(accelerator="hpu", devices=1, **quiet)
    seen["pytorch_lightning"] = [
        type(standalone_trainer.accelerator).__module__,
        type(standalone_trainer.strategy).__module__,
    ]
    seen["pytorch_lightning_auto"] = type(pl.Trainer(**quiet).accelerator).__module__
    fabric = Fabric(accelerator="hpu", devices=1, precision="bf16-mixed")
    seen["lightning_fabric"] = [type(fabric.accelerator).__module__, type(fabric.strategy._precision).__module__]
    seen["lightning_fabric_auto"] = type(Fabric().accelerator).__module__

    import lightning_hpu
    from lightning_hpu import standalone

    refused = []
    pairs: tuple[tuple[Any, Any], ...] = (
        (pl.Trainer, lightning_hpu.HPUParallelStrategy()),
        (L.Trainer, standalone.HPUParallelStrategy()),
    )
    for trainer_cls, strategy in pairs:
        try:
            trainer_cls(accelerator="hpu", strategy=strategy, **quiet)
        except lightning_hpu.HPUConfigurationError as error:
            refused.append(str(error))
    seen["refused"] = refused
    seen["shared"] = standalone.wrap_in_hpu_graph is lightning_hpu.wrap_in_hpu_graph
    return seen


def faked_versions() -> list[str]:
    import warnings

    import lightning
    import torch

    real = torch.__version__, lightning.__version__
    torch.__version__ = "2.7.1"  # type: ignore[assignment]
    lightning.__version__ = "2.5.6"
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import lightning_hpu
            from lightning_hpu.support.versions import warn_if_untested

            warn_if_untested()
    finally:
        torch.__version__, lightning.__version__ = real
    return [str(w.message) for w in caught if w.category is lightning_hpu.UntestedVersionWarning]


def watchdogs() -> dict[str, Any]:
    """Left running: Fabric has no teardown, so its watchdog watches until the process exits."""
    import time
    from datetime import timedelta

    import torch.distributed as dist

    from lightning_hpu.distributed.rank_watchdog import RankWatchdog

    master = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)
    running = [
        RankWatchdog("127.0.0.1", master.port, rank, 2, job="exit", timeout=timedelta(seconds=20), poll_seconds=0)
        for rank in range(2)
    ]
    time.sleep(0.3)
    globals()["_KEPT"] = (master, running)  # alive until the interpreter shuts down
    return {"watchdogs": len(running)}


SECTIONS: tuple[Callable[[], Any], ...] = (import_is_cheap, no_import, faked_versions, watchdogs)


def main() -> None:
    report: dict[str, Any] = {}
    for section in SECTIONS:
        try:
            report[section.__name__] = section()
        except Exception:  # each test reads its own section's failure
            report[section.__name__] = {"error": traceback.format_exc()}
    print(json.dumps(report))
    print("done", flush=True)


if __name__ == "__main__":
    main()
