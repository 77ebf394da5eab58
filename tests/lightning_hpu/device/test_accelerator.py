"""HPUAccelerator: availability, device counts, the ``devices`` argument, stats, registration."""

from __future__ import annotations

import pytest
import torch
from lightning.fabric.accelerators import ACCELERATOR_REGISTRY
from lightning.fabric.strategies import STRATEGY_REGISTRY
from lightning.pytorch.accelerators import AcceleratorRegistry
from lightning.pytorch.strategies import StrategyRegistry

from lightning_hpu import HPUAccelerator
from lightning_hpu.runtime import MEMORY_STAT_KEYS
from tests.helpers.standin import reset_backend
from tests.helpers.trainer import quiet_trainer


@pytest.mark.parametrize(
    ("devices", "expected"),
    [(1, 1), ("1", 1), (2, 2), ("auto", 3), (-1, 3), ("-1", 3), ([0, 2], 2), ("0,1", 2), (" 3 ", 3)],
)
def test_parse_devices(monkeypatch: pytest.MonkeyPatch, devices: object, expected: int) -> None:
    monkeypatch.setenv("LIGHTNING_HPU_CPU_DEVICES", "3")
    reset_backend()
    assert HPUAccelerator.parse_devices(devices).count == expected
    assert len(HPUAccelerator.get_parallel_devices(devices)) == expected


@pytest.mark.parametrize(
    ("devices", "message"),
    [
        (0, r"`devices=0` is not valid for HPUAccelerator: use a positive int"),
        (-2, r"`devices=-2` is not valid"),
        ("abc", r"`devices='abc'` is not valid"),
        (1.5, r"`devices=1.5` is not valid for HPUAccelerator \(got a float\)"),
        (True, r"`devices=True` is not valid for HPUAccelerator \(got a bool\)"),
        ([], r"a list must hold HPU indices"),
        ([0, 0], r"the list repeats an index"),
        (4, r"`devices=4` asks for 4 HPUs but only 1 is visible: set LIGHTNING_HPU_CPU_DEVICES=4"),
        ([1], r"asks for 2 HPUs but only 1 is visible"),
    ],
)
def test_parse_devices_errors_name_the_argument(devices: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        HPUAccelerator.parse_devices(devices)


def test_device_count_is_real(no_hpu: None) -> None:
    assert not HPUAccelerator.is_available()
    assert HPUAccelerator.auto_device_count() == 0


def test_availability_name_and_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIGHTNING_HPU_CPU_DEVICE_NAME", "GAUDI3")
    monkeypatch.setenv("PT_HPU_LAZY_MODE", "0")
    reset_backend()
    assert HPUAccelerator.is_available()
    assert HPUAccelerator.get_device_name() == "GAUDI3"
    assert not HPUAccelerator.is_lazy()


def test_device_stats_for_device_stats_monitor() -> None:
    resident = torch.ones(256, device="hpu")  # a tensor on the HPU: its bytes are in use
    stats = HPUAccelerator().get_device_stats("hpu")
    assert set(stats) == set(MEMORY_STAT_KEYS)
    assert stats["InUse"] >= resident.numel() * resident.element_size()


def test_names_are_registered_for_trainer_and_fabric() -> None:
    assert AcceleratorRegistry["hpu"]["accelerator"] is HPUAccelerator
    assert "hpu" in ACCELERATOR_REGISTRY
    assert "hpu_single" in StrategyRegistry
    assert "hpu_single" in STRATEGY_REGISTRY


def test_device_stats_monitor_logs_hpu_memory(tmp_path: object) -> None:
    from lightning.pytorch.callbacks import DeviceStatsMonitor
    from lightning.pytorch.loggers import CSVLogger

    from tests.helpers.models import RegressionModel

    logger = CSVLogger(str(tmp_path))
    trainer = quiet_trainer(
        accelerator="hpu",
        max_steps=2,
        limit_val_batches=0,
        log_every_n_steps=1,
        callbacks=[DeviceStatsMonitor()],
        logger=logger,
    )
    trainer.fit(RegressionModel())
    header = (logger.log_dir + "/metrics.csv").replace("//", "/")
    with open(header) as metrics:
        columns = metrics.readline().strip().split(",")
    assert any(column.endswith("MaxInUse") for column in columns), columns
    assert any(column.endswith("Limit") for column in columns), columns


def test_setup_device_refuses_a_device_of_another_type(standin: object) -> None:
    with pytest.raises(ValueError, match=r"^Device should be HPU: HPUAccelerator got cpu; pass an hpu device\.$"):
        HPUAccelerator().setup_device(torch.device("cpu"))
