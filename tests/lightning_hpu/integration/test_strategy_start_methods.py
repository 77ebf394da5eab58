"""Every Lightning strategy name keeps on the HPU the start method of its Lightning twin
(``lightning_hpu.integration.strategy_names``): ``"ddp_spawn"`` spawns its processes (Fabric's ``launch()`` without a
function raises Lightning's ``TypeError``; a one-device Trainer trains in a spawned process, not in the caller),
``"ddp"`` re-runs the script, and a name that forks is refused in one sentence (an HPU process cannot be forked)."""

from __future__ import annotations

from typing import Any

import pytest
import torch.multiprocessing
from lightning.fabric import Fabric
from lightning.fabric.strategies import STRATEGY_REGISTRY as FABRIC_STRATEGY_REGISTRY
from lightning.pytorch import Trainer
from lightning.pytorch.strategies import StrategyRegistry

from lightning_hpu import HPUConfigurationError
from lightning_hpu.runtime import settings
from tests.helpers.models import RegressionModel

REGISTRIES: dict[str, Any] = {"Trainer": StrategyRegistry, "Fabric": FABRIC_STRATEGY_REGISTRY}


def _build(owner: str, accelerator: str, strategy: str, devices: int = 2) -> Any:
    if owner == "Trainer":
        return Trainer(accelerator=accelerator, devices=devices, strategy=strategy, logger=False)
    return Fabric(accelerator=accelerator, devices=devices, strategy=strategy)


@pytest.fixture
def two_hpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(settings.CPU_DEVICES_ENV, "2")


@pytest.mark.parametrize("owner", ["Trainer", "Fabric"])
def test_every_name_keeps_the_start_method_of_its_lightning_twin(owner: str, two_hpus: None) -> None:
    registry = REGISTRIES[owner]
    names = [name for name in registry.available_strategies() if "start_method" in registry[name]["init_params"]]
    assert {"ddp", "ddp_spawn", "ddp_fork", "ddp_notebook"} <= set(names)
    for name in names:
        start_method = registry[name]["init_params"]["start_method"]
        if start_method in ("fork", "forkserver"):
            with pytest.raises(HPUConfigurationError, match=rf"^`{owner}\(strategy='{name}'\)` cannot drive an HPU"):
                _build(owner, "hpu", name)
            continue
        hpu, lightning = _build(owner, "hpu", name).strategy, _build(owner, "cpu", name).strategy
        assert hpu._start_method == lightning._start_method == start_method, name
        assert type(hpu.launcher) is type(lightning.launcher), name


def test_fabric_launch_without_a_function_under_ddp_spawn_raises_lightnings_type_error() -> None:
    messages = {}
    for accelerator in ("cpu", "hpu"):
        with pytest.raises(TypeError) as raised:
            _build("Fabric", accelerator, "ddp_spawn", devices=1).launch()
        messages[accelerator] = str(raised.value)
    assert messages["hpu"] == messages["cpu"].replace("`DDPStrategy`", "`HPUParallelStrategy`")  # Lightning's formula
    assert "`.launch()` needs to be called with a function" in messages["hpu"]


class _Spawned(Exception):
    """Raised instead of spawning: the test sees what would have been started."""


class _RecordingModel(RegressionModel):
    steps_here = 0

    def training_step(self, batch: Any, batch_idx: int) -> Any:
        type(self).steps_here += 1
        return super().training_step(batch, batch_idx)


def test_a_one_device_trainer_under_ddp_spawn_trains_in_a_spawned_process(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[dict[str, Any]] = []

    def start_processes(function: Any, args: Any = (), nprocs: int = 1, start_method: str = "", **kwargs: Any) -> Any:
        started.append({"nprocs": nprocs, "start_method": start_method})
        raise _Spawned

    monkeypatch.setattr(torch.multiprocessing, "start_processes", start_processes)
    for accelerator in ("cpu", "hpu"):
        trainer = Trainer(
            accelerator=accelerator,
            devices=1,
            strategy="ddp_spawn",
            max_steps=1,
            logger=False,
            enable_checkpointing=False,
        )
        with pytest.raises(_Spawned):
            trainer.fit(_RecordingModel())
    assert started == [{"nprocs": 1, "start_method": "spawn"}] * 2  # plain Lightning's, then the HPU's
    assert _RecordingModel.steps_here == 0  # nothing trained in this process
