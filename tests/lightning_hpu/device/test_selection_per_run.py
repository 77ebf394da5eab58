"""The HPUs a ``devices`` argument selects belong to the Trainer or Fabric that was given it, not to the process.

Two Trainers with different ``devices`` in one process (and a Trainer beside a Fabric) each bind to the HPUs of their
own, whichever was built last; each reads its ``devices`` once. The binding itself is process state (the bridge's
``HLS_MODULE_ID``): between two set-ups in one process a test unbinds, as a new process would start.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from lightning.fabric import Fabric

from lightning_hpu import HPUAccelerator
from lightning_hpu.device import selection
from lightning_hpu.device.accelerator import HPUAccelerator as FabricHPUAccelerator
from lightning_hpu.device.selection import HPUSelection, selection_of
from lightning_hpu.distributed.hccl import hccl_backend_name
from lightning_hpu.runtime import get_backend
from tests.helpers.standin import reset_backend
from tests.helpers.trainer import quiet_trainer


@pytest.fixture
def four_hpus(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("LIGHTNING_HPU_CPU_DEVICES", "4")
    reset_backend()
    return get_backend()


def _unbind(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a new process starts with: no HPU bound yet."""
    monkeypatch.delenv("HLS_MODULE_ID", raising=False)


def test_two_trainers_each_bind_to_their_own_devices(four_hpus: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    first = quiet_trainer(accelerator="hpu", devices=[3])
    second = quiet_trainer(accelerator="hpu", devices=[1])
    first.strategy.setup_environment()  # the second Trainer, built since, has not changed what the first selected
    assert os.environ["HLS_MODULE_ID"] == "3" and four_hpus.current_device() == 3
    _unbind(monkeypatch)
    second.strategy.setup_environment()
    assert os.environ["HLS_MODULE_ID"] == "1" and four_hpus.current_device() == 1


def test_a_trainer_and_a_fabric_each_bind_to_their_own_devices(four_hpus: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    trainer = quiet_trainer(accelerator="hpu", devices=[2])
    fabric = Fabric(accelerator="hpu", devices=[0])
    trainer.strategy.setup_environment()
    assert four_hpus.current_device() == 2
    _unbind(monkeypatch)
    fabric.strategy.setup_environment()
    assert four_hpus.current_device() == 0


def test_each_parallel_strategy_binds_its_local_ranks_from_its_own_accelerator(
    four_hpus: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    listed = quiet_trainer(accelerator="hpu", devices=[2, 3])
    counted = Fabric(accelerator="hpu", devices=2)  # a count after a list: the list's Trainer keeps its list
    assert selection_of(listed.strategy) == HPUSelection([2, 3], 2, (2, 3))
    assert selection_of(counted.strategy) == HPUSelection(2, 2)
    monkeypatch.setenv("LOCAL_RANK", "1")  # as the second process of each job would run it
    assert hccl_backend_name(listed.strategy) == "hccl"  # local rank 1 of devices=[2, 3]: HPU 3
    assert os.environ["HLS_MODULE_ID"] == "3" and four_hpus.current_device() == 3
    _unbind(monkeypatch)
    assert hccl_backend_name(counted.strategy) == "hccl"  # a count: the bridge binds local rank 1 to HPU 1
    assert os.environ["HLS_MODULE_ID"] == "1" and four_hpus.current_device() == 1


def test_the_accelerator_keeps_the_selection_and_the_class_keeps_none(four_hpus: Any) -> None:
    trainer = quiet_trainer(accelerator="hpu", devices="1,3")
    accelerator = trainer.accelerator
    assert isinstance(accelerator, HPUAccelerator)
    assert accelerator.selection == HPUSelection("1,3", 2, (1, 3))
    assert HPUAccelerator.selection is None  # nothing on the class, nothing in the module
    assert not [name for name, value in vars(selection).items() if isinstance(value, HPUSelection)]


@pytest.mark.parametrize("build", [quiet_trainer, Fabric], ids=["Trainer", "Fabric"])
def test_devices_are_read_once_per_trainer_or_fabric(
    build: Any, four_hpus: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[Any] = []
    parse = selection._parse

    def counted(devices: Any, count: int | None) -> HPUSelection:
        reads.append(devices)
        return parse(devices, count)

    monkeypatch.setattr(selection, "_parse", counted)
    given: list[Any] = []
    parse_devices = FabricHPUAccelerator.parse_devices
    recorded = staticmethod(lambda devices: given.append(devices) or parse_devices(devices))
    monkeypatch.setattr(FabricHPUAccelerator, "parse_devices", recorded)  # the Trainer's extends it
    built = build(accelerator="hpu", devices=[0, 2])
    assert reads == [[0, 2]]  # read once, and nothing read again: not a count, not a list
    # Lightning's connector is handed the selection, and the accelerator keeps what it checked of it.
    assert given == [HPUSelection([0, 2], 2, (0, 2))] and isinstance(given[0], HPUSelection)
    assert built.accelerator.selection == given[0]
    assert [device.type for device in built.strategy.parallel_devices] == ["hpu", "hpu"]
