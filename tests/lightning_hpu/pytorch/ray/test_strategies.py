"""Ray's Lightning strategies on HPU, without a Ray cluster: their HPU twins, and the Trainer in a faked Ray worker.

The worker is faked as Ray sets one up on a Gaudi node (``resources_per_worker={"HPU": 1}``): Ray's train context
(world of 2, this worker rank 1 and local rank 1), the HPU module Ray assigned (1) and the only module it shows
(``HABANA_VISIBLE_MODULES=1``), and ``LOCAL_RANK`` as Ray exports it. ``test_ray_train.py`` runs a real job.
"""

from __future__ import annotations

import os
import subprocess
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from lightning.pytorch import Trainer

from lightning_hpu import HPUCheckpointIO, HPUConfigurationError, HPUFSDPPrecisionPlugin, HPUPrecisionPlugin
from lightning_hpu.runtime import settings
from tests.helpers.paths import ROOT

pytest.importorskip("ray", reason="needs Ray Train: pip install 'ray[train]'")

import ray
import ray.train
from ray.train.lightning import (
    RayDDPStrategy,
    RayDeepSpeedStrategy,
    RayFSDPStrategy,
    RayLightningEnvironment,
    prepare_trainer,
)

from lightning_hpu.integration.ray_objects import hpu_twin_of
from lightning_hpu.pytorch.ray import (
    HPURayDDPStrategy,
    HPURayDeepSpeedStrategy,
    HPURayFSDPStrategy,
    worker,
)
from tests.helpers.trainer import quiet_trainer


@pytest.fixture
def ray_worker(monkeypatch: pytest.MonkeyPatch, standin: Any) -> dict[str, list[str]]:
    """This process as Ray's worker of world rank 1 on a node of 2 HPUs; the returned ids are Ray's assignment."""
    monkeypatch.setenv(settings.CPU_DEVICES_ENV, "2")
    monkeypatch.setenv(settings.VISIBLE_MODULES_ENV, "1")
    monkeypatch.setenv("LOCAL_RANK", "1")
    context = SimpleNamespace(
        get_world_size=lambda: 2,
        get_world_rank=lambda: 1,
        get_local_rank=lambda: 1,
        get_local_world_size=lambda: 2,
        get_node_rank=lambda: 0,
    )
    assigned: dict[str, list[str]] = {"HPU": ["1"]}
    monkeypatch.setattr(ray.train, "get_context", lambda: context)
    monkeypatch.setattr(ray, "get_runtime_context", lambda: SimpleNamespace(get_accelerator_ids=lambda: assigned))
    from tests.helpers.standin import reset_backend

    reset_backend()
    return assigned


def _trainer(strategy: Any) -> Trainer:
    return quiet_trainer(
        accelerator="hpu",
        devices="auto",
        strategy=strategy,
        plugins=[RayLightningEnvironment()],
        enable_checkpointing=False,
    )


def test_importing_the_package_does_not_import_ray(python_executable: str) -> None:
    code = "import sys, lightning_hpu; assert 'ray' not in sys.modules, 'ray was imported'"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))}
    result = subprocess.run([python_executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]


def test_the_ddp_twin_keeps_the_users_arguments_and_adds_the_hpu_defaults() -> None:
    twin = hpu_twin_of(RayDDPStrategy(find_unused_parameters=True, bucket_cap_mb=50, timeout=timedelta(seconds=42)))
    assert type(twin) is HPURayDDPStrategy
    assert isinstance(twin, RayDDPStrategy)  # what prepare_trainer requires
    assert twin._ddp_kwargs == {"find_unused_parameters": True, "bucket_cap_mb": 50, "gradient_as_bucket_view": True}
    assert twin._timeout == timedelta(seconds=42)


def test_the_fsdp_and_deepspeed_twins_keep_the_users_arguments() -> None:
    fsdp = hpu_twin_of(RayFSDPStrategy(sharding_strategy="SHARD_GRAD_OP", state_dict_type="sharded"))
    assert type(fsdp) is HPURayFSDPStrategy and isinstance(fsdp, RayFSDPStrategy)
    assert fsdp.sharding_strategy.name == "SHARD_GRAD_OP"
    assert fsdp._state_dict_type == "sharded"
    deepspeed = hpu_twin_of(RayDeepSpeedStrategy(stage=3, offload_optimizer=True, load_full_weights=True))
    assert type(deepspeed) is HPURayDeepSpeedStrategy and isinstance(deepspeed, RayDeepSpeedStrategy)
    assert deepspeed.config["zero_optimization"]["stage"] == 3
    assert deepspeed.config["zero_optimization"]["offload_optimizer"]["device"] == "cpu"
    assert deepspeed.load_full_weights is True


def test_the_twin_applies_the_hpu_rules_to_the_users_arguments() -> None:
    with pytest.raises(ValueError, match="fork"):
        hpu_twin_of(RayDDPStrategy(start_method="fork"))


def test_a_subclass_of_a_ray_strategy_is_refused_naming_the_twin_to_derive_from() -> None:
    class MyRayFSDP(RayFSDPStrategy):
        pass

    expected = r"MyRayFSDP\(\.\.\.\).*lightning_hpu\.pytorch\.ray\.HPURayFSDPStrategy"
    with pytest.raises(HPUConfigurationError, match=expected):
        hpu_twin_of(MyRayFSDP())


def test_a_twin_is_its_own_twin() -> None:
    twin = HPURayDDPStrategy()
    assert hpu_twin_of(twin) is twin


def test_the_trainer_runs_rays_ddp_strategy_as_its_twin_on_the_assigned_hpu(ray_worker: Any) -> None:
    trainer = prepare_trainer(_trainer(RayDDPStrategy(find_unused_parameters=True)))
    strategy = trainer.strategy
    assert type(strategy) is HPURayDDPStrategy
    assert strategy._ddp_kwargs["find_unused_parameters"] is True
    assert isinstance(strategy.checkpoint_io, HPUCheckpointIO)
    assert isinstance(trainer.precision_plugin, HPUPrecisionPlugin)
    assert strategy.root_device == torch.device("hpu")  # the process's bound module, as the bridge opens it
    # Ray's module, not the local rank's visible one:
    assert torch.empty(1, device=strategy.root_device).device == torch.device("hpu", 1)
    assert os.environ[settings.MODULE_ID_ENV] == "1"
    assert strategy.distributed_sampler_kwargs == {"num_replicas": 2, "rank": 1}
    assert (strategy.num_nodes, strategy.num_processes, strategy.world_size) == (1, 2, 2)


def test_the_trainer_runs_rays_fsdp_strategy_with_the_hpu_fsdp_precision(ray_worker: Any) -> None:
    trainer = prepare_trainer(_trainer(RayFSDPStrategy()))
    assert type(trainer.strategy) is HPURayFSDPStrategy
    assert isinstance(trainer.precision_plugin, HPUFSDPPrecisionPlugin)


def test_a_worker_without_an_hpu_is_told_to_ask_ray_for_one(ray_worker: dict[str, list[str]]) -> None:
    ray_worker["HPU"] = []
    trainer = _trainer(RayDDPStrategy())
    with pytest.raises(HPUConfigurationError, match=r"no HPU.*resources_per_worker=\{'HPU': 1\}"):
        _ = trainer.strategy.root_device


def test_a_gloo_process_group_from_ray_is_refused_naming_the_torch_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker.dist, "is_initialized", lambda: True)
    monkeypatch.setattr(worker.dist, "get_backend", lambda: "gloo")
    with pytest.raises(HPUConfigurationError, match=r"'gloo' process group.*TorchConfig\(backend='hccl'\)"):
        worker.check_process_group()


def test_the_twins_are_importable_from_the_package() -> None:
    import lightning_hpu

    assert lightning_hpu.HPURayDDPStrategy is HPURayDDPStrategy
    assert lightning_hpu.HPURayFSDPStrategy is HPURayFSDPStrategy
    assert lightning_hpu.HPURayDeepSpeedStrategy is HPURayDeepSpeedStrategy
