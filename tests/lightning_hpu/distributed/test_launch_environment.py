"""Installed and invisible: an HPU strategy run in the calling process leaves ``os.environ`` as Lightning's run does.

Each strategy of both trees (Trainer and Fabric) is built and run here, in this process, on one stand-in HPU; the
variables the run changed are compared with what the same run of plain Lightning on the CPU changes (Lightning's
launchers write ``MASTER_ADDR``, ``WORLD_SIZE``, ... themselves), and a process started afterwards must inherit
nothing of ours. The rank watchdog's ``LIGHTNING_HPU_LAUNCHER_PID`` reaches the ranks a launcher starts and no one
else (:mod:`lightning_hpu.distributed.launched_ranks`). The suite's autouse fixture cleans the launch variables after
every test, so each test here reads ``os.environ`` itself, before that clean-up.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from lightning.fabric import Fabric
from lightning.fabric.plugins.environments import LightningEnvironment
from lightning.fabric.strategies import DeepSpeedStrategy
from lightning.fabric.strategies.launchers import _MultiProcessingLauncher as FabricMultiProcessingLauncher
from lightning.fabric.strategies.launchers import _SubprocessScriptLauncher as FabricSubprocessScriptLauncher
from lightning.pytorch.strategies.launchers import _MultiProcessingLauncher, _SubprocessScriptLauncher

import lightning_hpu
from lightning_hpu import HPUConfigurationError
from lightning_hpu.distributed import launched_ranks
from lightning_hpu.fabric import strategies as fabric_strategies
from lightning_hpu.runtime import get_backend, settings
from tests.helpers.models import RegressionModel
from tests.helpers.trainer import quiet_trainer

#: Variables of the package and of the bridge, and the one the package sets for DeepSpeed: none may be left by a run.
OURS = ("LIGHTNING_HPU_", "PT_HPU_", "HABANA_", "HLS_", "DS_ACCELERATOR")
#: What a run may write at all: ours, and the launch variables (Lightning's launchers write some themselves).
LAUNCH = (
    *OURS,
    "MASTER_ADDR",
    "MASTER_PORT",
    "NODE_RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "RANK",
    "LOCAL_WORLD_SIZE",
    "ID",
)


def _changes(run: Callable[[], object]) -> dict[str, str | None]:
    """The variables ``run`` set, changed or removed (their new value, ``None`` if removed)."""
    before = dict(os.environ)
    run()
    after = dict(os.environ)
    return {name: after.get(name) for name in set(before) | set(after) if before.get(name) != after.get(name)}


@pytest.fixture
def clean_launch_variables(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each run starts where a fresh program does: no launch variable set (restored by monkeypatch afterwards)."""
    get_backend()  # the backend exists before the snapshot: creating it is not the strategy's run
    for name in ("MASTER_ADDR", "MASTER_PORT", "NODE_RANK", "LOCAL_RANK", "WORLD_SIZE", "RANK", "LOCAL_WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv(settings.LAUNCHER_PID_ENV, raising=False)
    yield


class _ConfiguredModel(RegressionModel):
    """A model with the ``configure_model`` hook the model-parallel strategy requires (no parallelization)."""

    def configure_model(self) -> None:
        pass


def _fit(strategy: Any, accelerator: str, root: Path) -> Callable[[], object]:
    def run() -> None:
        trainer = quiet_trainer(
            root, accelerator=accelerator, devices=1, strategy=strategy, max_steps=1, enable_checkpointing=False
        )
        trainer.fit(_ConfiguredModel())

    return run


def _fabric_step(strategy: Any, accelerator: str, root: Path) -> Callable[[], object]:
    def run() -> None:
        fabric = Fabric(accelerator=accelerator, devices=1, strategy=strategy)
        fabric.launch()
        with fabric.init_module():
            module = torch.nn.Linear(4, 1)
        if isinstance(fabric.strategy, DeepSpeedStrategy):  # DeepSpeed sets both up together
            model, optimizer = fabric.setup(module, torch.optim.SGD(module.parameters(), lr=0.1))
        else:
            model = fabric.setup_module(module)
            optimizer = fabric.setup_optimizers(torch.optim.SGD(model.parameters(), lr=0.1))
        fabric.backward(model(torch.ones(2, 4, device=fabric.device)).sum())
        optimizer.step()

    return run


def _parallelize(module: torch.nn.Module, mesh: Any) -> torch.nn.Module:
    return module.to(mesh.device_type)  # no parallelism: onto the mesh's device only


#: Each HPU strategy (as the user names it) and the plain Lightning strategy whose run on the CPU it is compared with.
STRATEGIES: dict[str, tuple[Callable[[], Any], str]] = {
    "Trainer SingleHPUStrategy": (lambda: "hpu_single", "auto"),
    "Trainer HPUParallelStrategy": (lambda: "ddp", "ddp"),
    "Trainer HPUFSDPStrategy": (lambda: "hpu_fsdp", "ddp"),
    "Trainer HPUModelParallelStrategy": (lightning_hpu.HPUModelParallelStrategy, "ddp"),
    "Trainer HPUDeepSpeedStrategy": (lambda: "hpu_deepspeed", "ddp"),
    "Fabric SingleHPUStrategy": (lambda: "hpu_single", "auto"),
    "Fabric HPUParallelStrategy": (lambda: "ddp", "ddp"),
    "Fabric HPUFSDPStrategy": (lambda: "hpu_fsdp", "ddp"),
    "Fabric HPUModelParallelStrategy": (lambda: fabric_strategies.HPUModelParallelStrategy(_parallelize), "ddp"),
    "Fabric HPUDeepSpeedStrategy": (lambda: "hpu_deepspeed", "ddp"),
}

#: What the Intel Gaudi bridge's ``initialize_distributed_hpu`` writes for itself, as Intel documents it (the HPU
#: strategies call it, as lightning-habana did): the launch variables of the rank it sets up.
BRIDGE_WRITES = {"RANK", "ID"}
#: What importing DeepSpeed's engine writes, the first time in a process, beside Lightning's DDP run it is compared
#: with: a DeepSpeed module (``runtime/zero/muon``) calls ``torch.compile`` at import, and torch's first compile in a
#: process writes its cache folder into the environment.
DEEPSPEED_IMPORT_WRITES = {"TORCHINDUCTOR_CACHE_DIR"}


def _run(name: str, accelerator: str, strategy: Any, root: Path) -> Callable[[], object]:
    return (_fit if name.startswith("Trainer") else _fabric_step)(strategy, accelerator, root)


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_a_run_in_process_leaves_the_environment_as_lightnings_own_run_does(
    name: str, clean_launch_variables: None, tmp_path: Path
) -> None:
    hpu_strategy, lightning_strategy = STRATEGIES[name]
    lightning = _changes(_run(name, "cpu", lightning_strategy, tmp_path))
    for variable in lightning:  # the HPU run starts where Lightning's did
        os.environ.pop(variable, None)
    before = dict(os.environ)
    hpu = _changes(_run(name, "hpu", hpu_strategy(), tmp_path))
    ours = {variable: value for variable, value in hpu.items() if variable.startswith(OURS)}
    assert not ours, f"{name} left {ours} in os.environ"
    deepspeed = DEEPSPEED_IMPORT_WRITES if "DeepSpeed" in name else set()
    assert set(hpu) - set(lightning) <= BRIDGE_WRITES | deepspeed, (hpu, lightning)
    # A process started now inherits Lightning's variables and the bridge's, nothing else of this run.
    printed = subprocess.run(
        [sys.executable, "-S", "-c", "import json, os; print(json.dumps(dict(os.environ)))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    inherited = json.loads(printed)
    new = {
        name
        for name in set(inherited) | set(before)
        if inherited.get(name) != before.get(name) and name.startswith(LAUNCH)
    }
    assert new <= set(lightning) | BRIDGE_WRITES, new - set(lightning)


def _build(owner: str, **arguments: Any) -> Any:
    if owner == "Trainer":
        return quiet_trainer(accelerator="hpu", enable_checkpointing=False, **arguments)
    return Fabric(accelerator="hpu", **arguments)


@pytest.mark.parametrize("owner", ["Trainer", "Fabric"])
def test_building_a_parallel_strategy_sets_nothing(owner: str, clean_launch_variables: None) -> None:
    assert _changes(lambda: _build(owner, devices=1, strategy="ddp")) == {}


@pytest.fixture
def two_hpus(monkeypatch: pytest.MonkeyPatch, clean_launch_variables: None) -> None:
    monkeypatch.setenv(settings.CPU_DEVICES_ENV, "2")


@pytest.mark.parametrize("owner", ["Trainer", "Fabric"])
def test_the_ranks_a_script_launcher_starts_get_the_launchers_pid_and_this_process_keeps_nothing(
    owner: str, two_hpus: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[dict[str, str]] = []

    def popen(command: Any, env: dict[str, str], **kwargs: Any) -> Any:
        started.append(env)
        return types.SimpleNamespace(pid=0)

    strategy = _build(owner, devices=2, strategy="ddp").strategy
    launcher = strategy.launcher
    assert isinstance(launcher, (_SubprocessScriptLauncher, FabricSubprocessScriptLauncher))
    monkeypatch.setattr(subprocess, "Popen", popen)
    monkeypatch.setattr(launched_ranks.atexit, "register", lambda *call: None)  # no rank to wait for at exit
    changed = _changes(launcher._call_children_scripts)
    assert [env.get(settings.LAUNCHER_PID_ENV) for env in started] == [str(os.getpid())]
    assert settings.LAUNCHER_PID_ENV not in changed  # Lightning's own variables only (MASTER_ADDR, ...)


def test_a_script_launcher_lets_its_ranks_finish_at_exit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ranks die with their launcher (``follow_launcher``): its exit waits for them first, within a grace."""
    at_exit: list[tuple[Any, ...]] = []
    monkeypatch.setattr(launched_ranks.atexit, "register", lambda *call: at_exit.append(call))

    class Launcher:
        procs: list[subprocess.Popen[bytes]] = []

        def _call_children_scripts(self) -> None:
            pass

    launcher = Launcher()
    launched_ranks.StartChildrenWithLauncherPid(launcher)()
    assert at_exit == [(launched_ranks.let_ranks_finish, launcher)]
    ending = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.5)"])
    stalled = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        launcher.procs = [ending]
        launched_ranks.let_ranks_finish(launcher, seconds=30)
        assert ending.poll() == 0
        launcher.procs = [stalled]
        started = time.monotonic()
        launched_ranks.let_ranks_finish(launcher, seconds=0.5)
        assert stalled.poll() is None and time.monotonic() - started < 5
    finally:
        stalled.kill()
        stalled.wait()


@pytest.mark.parametrize("owner", ["Trainer", "Fabric"])
def test_spawned_ranks_get_the_launchers_pid_with_the_strategy(owner: str, two_hpus: None) -> None:
    strategy = _build(owner, devices=2, strategy="ddp_spawn").strategy
    assert isinstance(strategy.launcher, (_MultiProcessingLauncher, FabricMultiProcessingLauncher))
    assert strategy._launcher_pid == os.getpid()
    assert settings.LAUNCHER_PID_ENV not in os.environ


@pytest.mark.parametrize("owner", ["Trainer", "Fabric"])
def test_a_launched_rank_follows_its_launcher_and_passes_nothing_on(
    owner: str, two_hpus: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    followed: list[int] = []
    monkeypatch.setattr(launched_ranks, "follow_launcher", followed.append)
    launcher = os.getppid()
    rank = {"LOCAL_RANK": "1", "NODE_RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"}
    for name, value in {**rank, settings.LAUNCHER_PID_ENV: str(launcher)}.items():
        monkeypatch.setenv(name, value)
    strategy = _build(owner, devices=2, strategy="ddp").strategy
    assert isinstance(strategy.cluster_environment, LightningEnvironment)
    assert followed == [launcher] and strategy._launcher_pid == launcher
    assert settings.LAUNCHER_PID_ENV not in os.environ  # read once: the processes this rank starts do not get it


def test_a_launcher_pid_that_is_no_pid_is_refused_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(settings.LAUNCHER_PID_ENV, "rank0")
    with pytest.raises(HPUConfigurationError, match="LIGHTNING_HPU_LAUNCHER_PID='rank0' is not a process id"):
        settings.launcher_pid()
