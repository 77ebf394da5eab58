"""The Lightning connector integration: what the Trainer and Fabric choose when the accelerator is HPU."""

from __future__ import annotations

import re
import traceback
from typing import Any

import pytest
import torch
from lightning.fabric import Fabric
from lightning.pytorch import Trainer
from lightning.pytorch.accelerators import CPUAccelerator
from lightning.pytorch.strategies import SingleDeviceStrategy

from lightning_hpu import (
    HPUAccelerator,
    HPUConfigurationError,
    HPUNotAvailableError,
    HPUPrecisionPlugin,
    SingleHPUStrategy,
    integration,
)
from lightning_hpu.fabric.plugins.precision import HPUPrecision
from lightning_hpu.fabric.strategies import SingleHPUStrategy as FabricSingleHPUStrategy
from lightning_hpu.integration import connectors
from tests.helpers.standin import counters as standin_counters
from tests.helpers.standin import reset_backend
from tests.helpers.trainer import quiet_trainer


def _trainer(**kwargs: Any) -> Trainer:
    return quiet_trainer(**kwargs)


@pytest.mark.parametrize("accelerator", [HPUAccelerator(), "hpu", "auto"])
def test_hpu_gets_the_hpu_strategy_and_precision(accelerator: Any) -> None:
    trainer = _trainer(accelerator=accelerator)
    assert isinstance(trainer.accelerator, HPUAccelerator)
    assert isinstance(trainer.strategy, SingleHPUStrategy)
    assert isinstance(trainer.precision_plugin, HPUPrecisionPlugin)
    assert trainer.strategy.root_device == torch.device("hpu")  # the process's HPU (hpu:0 on the stand-in)


def test_auto_picks_cpu_without_gaudi(no_hpu: None) -> None:
    trainer = _trainer(accelerator="auto")
    assert isinstance(trainer.accelerator, CPUAccelerator)
    assert not isinstance(trainer.strategy, SingleHPUStrategy)


@pytest.mark.parametrize("strategy", ["hpu_single", "single_device", "auto", "HPU_SINGLE"])
def test_strategy_names(strategy: str) -> None:
    trainer = _trainer(accelerator="hpu", strategy=strategy)
    assert isinstance(trainer.strategy, SingleHPUStrategy)


def test_strategy_instance_brings_the_accelerator() -> None:
    trainer = _trainer(strategy=SingleHPUStrategy(accelerator=HPUAccelerator()))
    assert isinstance(trainer.strategy, SingleHPUStrategy)
    assert isinstance(trainer.accelerator, HPUAccelerator)


def test_a_cpu_strategy_cannot_drive_an_hpu() -> None:
    with pytest.raises(ValueError, match=r"cannot drive an HPU .* use strategy='hpu_single'"):
        _trainer(accelerator="hpu", strategy=SingleDeviceStrategy(device="cpu"))


def test_an_hpu_strategy_needs_the_hpu_accelerator() -> None:
    with pytest.raises(ValueError, match=r"needs accelerator='hpu'"):
        _trainer(accelerator="cpu", strategy="hpu_single")


def test_hpu_without_gaudi_or_stand_in_fails_with_one_sentence(no_hpu: None) -> None:
    with pytest.raises(HPUNotAvailableError, match="set LIGHTNING_HPU_BACKEND=cpu"):
        _trainer(accelerator="hpu")
    with pytest.raises(HPUNotAvailableError, match="set LIGHTNING_HPU_BACKEND=cpu"):
        _trainer(accelerator=HPUAccelerator())


@pytest.mark.parametrize(
    ("devices", "message"),
    [
        (0, r"`devices=0` is not valid for HPUAccelerator"),
        (-2, r"`devices=-2` is not valid for HPUAccelerator"),
        ([0, 0], r"`devices=\[0, 0\]` is not valid for HPUAccelerator \(the list repeats an index\)"),
        ("cuda:0", "`devices='cuda:0'` is not valid"),
        (2, "LIGHTNING_HPU_CPU_DEVICES=2"),
    ],
)
def test_bad_devices_fail_clearly(devices: Any, message: str) -> None:
    for build in (_trainer, Fabric):
        with pytest.raises(HPUConfigurationError, match=message) as caught:
            build(accelerator="hpu", devices=devices)
        # One exception: no "During handling of the above exception" trace repeating the same mistake.
        shown = "".join(traceback.format_exception(caught.value))
        assert shown.count("Traceback (most recent call last)") == 1, shown


@pytest.mark.parametrize("emulated", [1, 2])
def test_devices_errors_give_the_true_hpu_count(emulated: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIGHTNING_HPU_CPU_DEVICES", str(emulated))
    reset_backend()
    for devices in (0, "x", []):
        hpus = "1 visible HPU," if emulated == 1 else f"{emulated} visible HPUs,"
        message = rf"`devices={re.escape(repr(devices))}` .* for all {hpus}"
        for build in (_trainer, Fabric):
            with pytest.raises(ValueError, match=message):
                build(accelerator="hpu", devices=devices)


@pytest.mark.parametrize(
    ("precision", "expected"), [("bf16-mixed", "bf16-mixed"), ("bf16", "bf16-mixed"), ("32", "32-true")]
)
def test_precision_strings_map_to_the_hpu_plugin(precision: str, expected: str) -> None:
    trainer = _trainer(accelerator="hpu", precision=precision)
    assert isinstance(trainer.precision_plugin, HPUPrecisionPlugin)
    assert trainer.precision_plugin.precision == expected


def test_fp16_is_refused_on_first_generation_gaudi(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIGHTNING_HPU_CPU_DEVICE_NAME", "GAUDI")
    reset_backend()
    with pytest.raises(ValueError, match="fp16 precision needs Gaudi2 or later"):
        _trainer(accelerator="hpu", precision="16-mixed")


def test_fabric_uses_hpu_strategy_precision_and_marks_steps(lazy_standin: Any) -> None:
    fabric = Fabric(accelerator="hpu", devices=1, precision="bf16-mixed")
    assert isinstance(fabric.strategy, FabricSingleHPUStrategy)
    assert isinstance(fabric.strategy.precision, HPUPrecision)
    model = torch.nn.Linear(4, 1)
    inner_dtypes: list[torch.dtype] = []
    model.register_forward_hook(lambda module, args, out: inner_dtypes.append(out.dtype))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model, optimizer = fabric.setup(model, optimizer)
    output = model(torch.randn(2, 4, device=fabric.device))
    assert inner_dtypes == [torch.bfloat16]  # autocast really ran the layer in bf16
    before = standin_counters().mark_steps
    fabric.backward(output.float().sum())
    assert standin_counters().mark_steps == before + 1
    optimizer.step()
    assert standin_counters().mark_steps == before + 2


def test_integration_refuses_a_lightning_without_the_expected_internals() -> None:
    class MovedConnector:
        _choose_strategy = staticmethod(lambda: None)

    with pytest.raises(integration.LightningIntegrationError, match=r"lacks _choose_auto_accelerator"):
        connectors.check_connector(MovedConnector)


def test_integration_is_installed_once() -> None:
    assert integration.is_installed()
    from lightning.pytorch.trainer.connectors.accelerator_connector import _AcceleratorConnector

    before = _AcceleratorConnector._choose_strategy
    integration.install()
    assert _AcceleratorConnector._choose_strategy is before
