"""``devices=[...]`` binds each process to the HPU module it names, the bridge's way (``HLS_MODULE_ID``).

The two-process case (``devices=[2, 3]``, Trainer and Fabric) runs in ``test_parallel_multiprocess.py``; here are the
one-process binding, the refusals, and the stand-in's emulation of the bridge's module rules.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from lightning.fabric import Fabric

from lightning_hpu.device.selection import read_devices
from lightning_hpu.distributed.collectives import initialize_hccl
from lightning_hpu.runtime import get_backend
from tests.helpers.standin import reset_backend
from tests.helpers.trainer import quiet_trainer


@pytest.fixture
def four_hpus(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("LIGHTNING_HPU_CPU_DEVICES", "4")
    reset_backend()
    return get_backend()


def test_trainer_with_one_listed_hpu_binds_to_it(four_hpus: Any) -> None:
    trainer = quiet_trainer(accelerator="hpu", devices=[3])
    assert four_hpus.current_device() == 0
    trainer.strategy.setup_environment()
    assert os.environ["HLS_MODULE_ID"] == "3"
    assert four_hpus.current_device() == 3


def test_fabric_with_one_listed_hpu_binds_to_it(four_hpus: Any) -> None:
    fabric = Fabric(accelerator="hpu", devices="2,")
    fabric.strategy.setup_environment()
    assert four_hpus.current_device() == 2


def test_a_count_binds_nothing(four_hpus: Any) -> None:
    trainer = quiet_trainer(accelerator="hpu", devices=1)
    trainer.strategy.setup_environment()
    assert "HLS_MODULE_ID" not in os.environ
    assert four_hpus.current_device() == 0


def test_listed_hpus_are_positions_among_the_visible_modules(four_hpus: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HABANA_VISIBLE_MODULES", "1,3")
    assert read_devices([0, 1]).bind(1, four_hpus.device_count()) == 3
    assert four_hpus.current_device() == 3


def test_each_local_rank_binds_before_the_process_group(four_hpus: Any) -> None:
    assert initialize_hccl(world_size=2, global_rank=1, local_rank=1, selection=read_devices([2, 3])) == "hccl"
    assert four_hpus.current_device() == 3


@pytest.mark.parametrize(
    ("setup", "local_rank", "message"),
    [
        ({"HLS_MODULE_ID": "0"}, 0, r"`devices=\[2, 3\]` binds local rank 0 to HPU module 2, but HLS_MODULE_ID=0"),
        ({"HABANA_VISIBLE_MODULES": "0,1"}, 0, r"`devices=\[2, 3\]` names HPU 2, but only 2 are visible"),
        ({}, 2, r"`devices=\[2, 3\]` has no HPU for local rank 2"),
    ],
)
def test_binding_refusals_are_one_sentence(
    four_hpus: Any, monkeypatch: pytest.MonkeyPatch, setup: dict[str, str], local_rank: int, message: str
) -> None:
    for name, value in setup.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=message):
        read_devices([2, 3]).bind(local_rank, four_hpus.device_count())


# --- the stand-in's emulation of the bridge's module rules ----------------------------------------------------


def test_initialize_distributed_binds_the_local_rank_like_the_bridge(
    four_hpus: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    four_hpus.initialize_distributed(world_size=1, rank=0, local_rank=0)
    assert "HLS_MODULE_ID" not in os.environ  # one process: the bridge binds nothing
    monkeypatch.setenv("HABANA_VISIBLE_MODULES", "3,1")
    four_hpus.initialize_distributed(world_size=2, rank=0, local_rank=0)
    assert four_hpus.current_device() == 3
    four_hpus.initialize_distributed(world_size=2, rank=1, local_rank=1)
    assert four_hpus.current_device() == 3  # already bound: kept


def test_set_device_asserts_as_the_bridge_does(four_hpus: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match=r"set_device\(1\) needs HABANA_VISIBLE_MODULES"):
        four_hpus.set_device(1)
    four_hpus.set_device(0)
    assert four_hpus.current_device() == 0
    monkeypatch.delenv("HLS_MODULE_ID")
    monkeypatch.setenv("HABANA_VISIBLE_MODULES", "2,3")
    four_hpus.set_device(1)
    assert four_hpus.current_device() == 3
    monkeypatch.setenv("HABANA_VISIBLE_MODULES", "0,5")
    with pytest.raises(ValueError, match=r"HPU module\(s\) \[5\] are not emulated"):
        four_hpus.set_device(0)


def test_an_unbound_process_opens_the_first_visible_module(monkeypatch: pytest.MonkeyPatch) -> None:
    """As the bridge does: ``HABANA_VISIBLE_MODULES=2`` (what Ray gives a worker) means module 2, not module 0."""
    monkeypatch.setenv("LIGHTNING_HPU_CPU_DEVICES", "4")
    monkeypatch.setenv("HABANA_VISIBLE_MODULES", "2")
    monkeypatch.delenv("HLS_MODULE_ID", raising=False)
    reset_backend()
    try:
        assert get_backend().current_device() == 2
        trainer = quiet_trainer(accelerator="hpu", devices=1)
        assert trainer.strategy.root_device.type == "hpu"
        trainer.strategy.setup_environment()
        assert get_backend().current_device() == 2
    finally:
        monkeypatch.delenv("HABANA_VISIBLE_MODULES")
        reset_backend()
