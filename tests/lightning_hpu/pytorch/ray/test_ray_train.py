"""Ray Train on the stand-in's HPUs: one ``TorchTrainer`` job, 2 workers with ``resources_per_worker={"HPU": 1}``.

``ray_train_scenario.py`` trains with Ray's ``RayDDPStrategy``, ``RayFSDPStrategy`` and ``RayDeepSpeedStrategy``
(ZeRO-2) in turn, with ``accelerator="hpu"``, ``RayLightningEnvironment`` and ``RayTrainReportCallback``. Checked
here: Ray finds the HPUs as on a Gaudi node; each worker trains with the HPU twin of Ray's strategy on the HPU Ray
assigned to it; the weights equal plain SGD over the two workers' batches taken together; the checkpoints Ray
keeps were written through ``HPUCheckpointIO`` and hold those weights.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn
from torch.utils.data import DistributedSampler

from tests.helpers.models import regression_data
from tests.helpers.paths import ROOT, SCENARIOS

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("ray") is None, reason="needs Ray Train: pip install 'ray[train]'"
)

SCRIPT = SCENARIOS / "ray_train_scenario.py"
WORKERS = 2
EPOCHS = 2  # ray_train_scenario.EPOCHS
BATCH_SIZE = 8  # RegressionModel's, per worker
#: Variables of this test session that a Ray job started from a fresh shell would not have (Ray sets its own).
_INHERITED = (
    "HLS_MODULE_ID",
    "HABANA_VISIBLE_MODULES",
    "PT_HPU_LAZY_MODE",
    "LOCAL_RANK",
    "RANK",
    "WORLD_SIZE",
    "NODE_RANK",
    "MASTER_ADDR",
    "MASTER_PORT",
)
TWINS = {"ddp": "HPURayDDPStrategy", "fsdp": "HPURayFSDPStrategy", "deepspeed": "HPURayDeepSpeedStrategy"}


def _reference_weights() -> dict[str, list[float]]:
    """``RegressionModel`` trained by plain SGD on the CPU, each step on both workers' batches together.

    Lightning gives each worker the ``DistributedSampler`` that Ray's ranks define (training data is shuffled, seed
    0, reshuffled each epoch): worker r's k-th batch is the k-th slice of ``BATCH_SIZE`` of its sampler's order.
    """
    torch.manual_seed(0)
    model = nn.Sequential()
    model.add_module("layer", nn.Linear(8, 1))  # RegressionModel's parameter names
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data = regression_data()
    x, y = data.tensors
    initial_loss = nn.functional.mse_loss(model(x), y).item()
    samplers = [DistributedSampler(data, WORKERS, rank, shuffle=True, seed=0) for rank in range(WORKERS)]
    for epoch in range(EPOCHS):
        orders = []
        for sampler in samplers:
            sampler.set_epoch(epoch)
            orders.append(list(sampler))
        for start in range(0, len(orders[0]), BATCH_SIZE):
            batch = [index for order in orders for index in order[start : start + BATCH_SIZE]]
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x[batch]), y[batch]).backward()
            optimizer.step()
    assert nn.functional.mse_loss(model(x), y).item() < initial_loss / 2  # the reference learns
    return {name: value.detach().flatten().tolist() for name, value in model.state_dict().items()}


def _assert_weights(weights: dict[str, Any], reference: dict[str, list[float]]) -> None:
    assert sorted(weights) == sorted(reference)
    for name, values in reference.items():
        torch.testing.assert_close(torch.tensor(weights[name]).flatten(), torch.tensor(values), rtol=1e-5, atol=1e-6)


@pytest.fixture(scope="module")
def ray_job(tmp_path_factory: pytest.TempPathFactory, python_executable: str) -> Path:
    out = tmp_path_factory.mktemp("ray_train")
    env = {key: value for key, value in os.environ.items() if not key.startswith("RAY_") and key not in _INHERITED}
    env.update(
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "src"), str(ROOT), env.get("PYTHONPATH")])),
        LIGHTNING_HPU_BACKEND="cpu",
        LIGHTNING_HPU_CPU_DEVICES=str(WORKERS),  # the node's HPUs, which Ray finds through habana_frameworks
    )
    log = out / "job.log"
    with log.open("wb") as output:
        status = subprocess.run(
            [python_executable, str(SCRIPT), str(out)], env=env, stdout=output, stderr=subprocess.STDOUT, timeout=400
        ).returncode
    assert status == 0, log.read_text()[-6000:]
    return out


def _report(out: Path, strategy: str, rank: int) -> dict[str, Any]:
    report: dict[str, Any] = json.loads((out / f"{strategy}_rank{rank}.json").read_text())
    return report


def test_each_worker_trains_with_the_hpu_twin_on_the_hpu_ray_assigned(ray_job: Path) -> None:
    assert json.loads((ray_job / "checkpoints.json").read_text())["hpus"] == WORKERS  # found as on a Gaudi node
    for strategy, twin in TWINS.items():
        for rank in range(WORKERS):
            report = _report(ray_job, strategy, rank)
            assert report["strategy"] == twin
            assert report["world_size"] == WORKERS
            assert report["device"] == f"hpu:{rank}", strategy  # Ray gave worker r module r, its only visible one
            assert report["module"] == rank, strategy
            assert report["checkpoint_io"] == "HPUCheckpointIO", strategy


def test_weights_equal_sgd_over_both_workers_batches(ray_job: Path) -> None:
    reference = _reference_weights()
    for strategy in TWINS:
        ranks = range(WORKERS) if strategy != "fsdp" else [0]  # FSDP gathers the full weights on rank 0
        for rank in ranks:
            _assert_weights(_report(ray_job, strategy, rank)["weights"], reference)


def test_ray_keeps_the_checkpoints_hpu_checkpoint_io_wrote(ray_job: Path) -> None:
    kept = [Path(path) for path in json.loads((ray_job / "checkpoints.json").read_text())["kept"]]
    assert len(kept) == len(TWINS) * EPOCHS  # one per epoch of each strategy, in the order reported
    reference = _reference_weights()
    for index, strategy in enumerate(TWINS):
        last = kept[index * EPOCHS + EPOCHS - 1] / "checkpoint.ckpt"
        if strategy == "deepspeed":
            assert last.is_dir() and any(last.rglob("*model_states.pt"))  # DeepSpeed's own checkpoint layout
            continue
        checkpoint = torch.load(last, weights_only=False)  # no map_location: HPUCheckpointIO saved host copies
        assert checkpoint["epoch"] == EPOCHS - 1
        assert {value.device.type for value in checkpoint["state_dict"].values()} == {"cpu"}
        _assert_weights({name: value.flatten().tolist() for name, value in checkpoint["state_dict"].items()}, reference)
