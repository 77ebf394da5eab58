"""The argument errors Lightning raises itself, met once on the CPU (plain Lightning) and once on the HPU.

``python lightning_text_scenario.py OUT.json`` (with ``LIGHTNING_HPU_BACKEND=cpu``) runs every case through
:func:`namespaces.import_scenario`, so under ``LIGHTNING_HPU_TEST_NAMESPACE=standalone`` every Lightning name below
is the standalone ``pytorch_lightning``/``lightning_fabric`` one and lightning-hpu's come from
``lightning_hpu.standalone``; ``tests/lightning_hpu/integration/test_lightning_error_text.py`` imports it in process
for ``lightning``. Each case
gives the error of plain Lightning and the error on the HPU: ``[class names of its MRO, message]``; the report also
names the module of the ``Trainer`` it used.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

import torch
from lightning.fabric import Fabric
from lightning.fabric.connector import _Connector
from lightning.fabric.plugins import TorchCheckpointIO
from lightning.fabric.plugins.precision.fsdp import FSDPPrecision as FabricFSDPPrecision
from lightning.fabric.strategies import FSDPStrategy as FabricFSDPStrategy
from lightning.fabric.strategies import ModelParallelStrategy as FabricModelParallelStrategy
from lightning.pytorch import Trainer
from lightning.pytorch.plugins.precision.fsdp import FSDPPrecision
from lightning.pytorch.trainer import setup as trainer_setup
from lightning.pytorch.trainer.connectors.accelerator_connector import _AcceleratorConnector

from lightning_hpu import HPUAsyncCheckpointIO, HPUCheckpointIO
from lightning_hpu.fabric.strategies import HPUFSDPStrategy as FabricHPUFSDPStrategy
from lightning_hpu.integration.wrapping import MARKER

Error = list[Any]


def _error(make: Callable[[], object]) -> Error:
    try:
        make()
    except Exception as error:
        return [[cls.__name__ for cls in type(error).__mro__], " ".join(str(error).split())]
    return [[], ""]


def _trainer(accelerator: str, **arguments: Any) -> Trainer:
    return Trainer(accelerator=accelerator, logger=False, enable_checkpointing=False, **arguments)


def _no_fork() -> Any:
    """A platform whose multiprocessing cannot fork (Windows, macOS's default)."""
    return mock.patch("torch.multiprocessing.get_all_start_methods", return_value=["spawn", "forkserver"])


def _parallelize(module: torch.nn.Module, mesh: Any) -> torch.nn.Module:
    return module


def _lightnings_own(owner: Any, name: str) -> Any:
    """Lightning's own ``owner.name``, unwrapped from lightning-hpu's patch, for the time of a ``with`` block."""
    return mock.patch.object(owner, name, getattr(getattr(owner, name), MARKER))


def misspelt(make: Callable[[], object], owner: Any, name: str) -> dict[str, Error]:
    """``make()`` with Lightning's own check (``owner.name``) of the misspelt name, and with lightning-hpu's."""
    with _lightnings_own(owner, name):
        lightning = _error(make)
    return {"lightning": lightning, "hpu": _error(make)}


def both(make: Callable[[str], object]) -> dict[str, Error]:
    """``make(accelerator)`` with plain Lightning on the CPU and with the HPU."""
    return {"lightning": _error(lambda: make("cpu")), "hpu": _error(lambda: make("hpu"))}


def cases(root: Path) -> dict[str, dict[str, Error]]:
    path = root / "checkpoint.ckpt"
    with _no_fork():
        no_fork = {
            f"{owner} {name} without fork": both(lambda accelerator, build=build, name=name: build(accelerator, name))
            for owner, build in (
                ("Trainer", lambda accelerator, name: _trainer(accelerator, strategy=name)),
                ("Fabric", lambda accelerator, name: Fabric(accelerator=accelerator, strategy=name)),
            )
            for name in ("ddp_fork", "ddp_notebook")
        }
    sharded_filter = {"model": lambda key, value: True}
    config = "_check_config_and_set_final_flags"
    return {
        "Trainer misspelt strategy": misspelt(
            lambda: _trainer("hpu", strategy="hpu_paralel"), _AcceleratorConnector, config
        ),
        "Fabric misspelt strategy": misspelt(
            lambda: Fabric(accelerator="hpu", strategy="hpu_paralel"), _Connector, config
        ),
        "Trainer misspelt accelerator": misspelt(lambda: _trainer("hpuu"), _AcceleratorConnector, config),
        "Fabric misspelt accelerator": misspelt(lambda: Fabric(accelerator="hpuu"), _Connector, config),
        "Trainer misspelt profiler": misspelt(
            lambda: _trainer("hpu", profiler="hpuu"), trainer_setup, "_init_profiler"
        ),
        "Trainer invalid precision": both(lambda accelerator: _trainer(accelerator, precision="bogus")),
        "Fabric invalid precision": both(lambda accelerator: Fabric(accelerator=accelerator, precision="bogus")),
        **no_fork,
        "Trainer storage_options": both(
            lambda accelerator: _trainer(accelerator, devices=1).strategy.checkpoint_io.save_checkpoint(
                {}, path, storage_options={"retries": 3}
            )
        ),
        "HPUAsyncCheckpointIO storage_options": {
            "lightning": _error(lambda: TorchCheckpointIO().save_checkpoint({}, path, storage_options={})),
            "hpu": _error(lambda: HPUAsyncCheckpointIO().save_checkpoint({}, path, storage_options={})),
        },
        "HPUCheckpointIO storage_options": {
            "lightning": _error(lambda: TorchCheckpointIO().save_checkpoint({}, path, storage_options={})),
            "hpu": _error(lambda: HPUCheckpointIO().save_checkpoint({}, path, storage_options={})),
        },
        "Fabric FSDP storage_options": {
            "lightning": _error(lambda: FabricFSDPStrategy().save_checkpoint(path, {}, storage_options={})),
            "hpu": _error(lambda: FabricHPUFSDPStrategy().save_checkpoint(path, {}, storage_options={})),
        },
        "Fabric FSDP sharded filter": {
            "lightning": _error(
                lambda: FabricFSDPStrategy(state_dict_type="sharded").save_checkpoint(path, {}, filter=sharded_filter)
            ),
            "hpu": _error(
                lambda: FabricHPUFSDPStrategy(state_dict_type="sharded").save_checkpoint(
                    path, {}, filter=sharded_filter
                )
            ),
        },
        "Trainer gpu": {
            "lightning": _error(_AcceleratorConnector._choose_gpu_accelerator_backend.__wrapped__),  # type: ignore[attr-defined]
            "hpu": _error(lambda: _trainer("gpu")),
        },
        "Fabric gpu": {
            "lightning": _error(_Connector._choose_gpu_accelerator_backend.__wrapped__),  # type: ignore[attr-defined]
            "hpu": _error(lambda: Fabric(accelerator="gpu")),
        },
        "Fabric ModelParallelStrategy 16-mixed": both(
            lambda accelerator: Fabric(
                accelerator=accelerator,
                devices=1,
                strategy=FabricModelParallelStrategy(_parallelize),
                precision="16-mixed",
            )
        ),
        # Lightning's FSDP runs on CUDA only: its verdict on a precision is its FSDP plugin's.
        "Trainer FSDP 64-true": {
            "lightning": _error(lambda: FSDPPrecision("64-true")),  # type: ignore[arg-type]
            "hpu": _error(lambda: _trainer("hpu", strategy="fsdp", precision="64-true")),
        },
        "Fabric FSDP 64-true": {
            "lightning": _error(lambda: FabricFSDPPrecision("64-true")),  # type: ignore[arg-type]
            "hpu": _error(lambda: Fabric(accelerator="hpu", strategy="fsdp", precision="64-true")),
        },
    }


def main(out: Path) -> None:
    with tempfile.TemporaryDirectory() as root:
        out.write_text(json.dumps({"trainer": Trainer.__module__, "cases": cases(Path(root))}, indent=1))


if __name__ == "__main__":
    from tests.helpers.namespaces import import_scenario

    import_scenario("lightning_text_scenario").main(Path(sys.argv[1]))
