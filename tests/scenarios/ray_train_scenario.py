"""One Ray Train job on the stand-in: 2 workers with ``{"HPU": 1}`` each, trained with Ray's three strategies.

Run by ``test_ray_train.py`` as ``python ray_train_scenario.py OUT``. The training function is written as Ray's
documentation writes it (``RayDDPStrategy``, ``RayFSDPStrategy``, ``RayDeepSpeedStrategy``,
``RayLightningEnvironment``, ``RayTrainReportCallback``, ``prepare_trainer``), with ``accelerator="hpu"``. Each
worker writes ``OUT/<strategy>_rank<r>.json``: the strategy's class, the device of the model's parameters, the HPU
module the process drives, the checkpoint IO, the final weights. The driver writes ``OUT/checkpoints.json``: the
checkpoint directories Ray kept, in the order they were reported.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import ray
import ray.train
from lightning.pytorch import Callback, LightningModule, Trainer
from ray.train import CheckpointConfig, RunConfig, ScalingConfig
from ray.train.lightning import (
    RayDDPStrategy,
    RayDeepSpeedStrategy,
    RayFSDPStrategy,
    RayLightningEnvironment,
    RayTrainReportCallback,
    prepare_trainer,
)
from ray.train.torch import TorchConfig, TorchTrainer

from tests.helpers.models import RegressionModel
from tests.helpers.trainer import quiet_trainer

EPOCHS = 2
STRATEGIES = ("ddp", "fsdp", "deepspeed")


class Probe(Callback):
    """Records, at the end of training, what the worker ran on."""

    def __init__(self, name: str, out: Path) -> None:
        self.name = name
        self.out = out
        self.device = ""

    def on_train_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self.device = str(next(pl_module.parameters()).device)

    def on_train_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        from lightning_hpu.runtime import require_backend

        state = trainer.strategy.lightning_module_state_dict()  # FSDP: the full state, on every rank
        report: dict[str, Any] = {
            "strategy": type(trainer.strategy).__name__,
            "device": self.device,
            "module": require_backend().current_device(),
            "checkpoint_io": type(trainer.strategy.checkpoint_io).__name__,
            "weights": {key: value.detach().cpu().flatten().tolist() for key, value in state.items()},
            "world_size": trainer.world_size,
        }
        rank = ray.train.get_context().get_world_rank()
        (self.out / f"{self.name}_rank{rank}.json").write_text(json.dumps(report))


def train_func(config: dict[str, Any]) -> None:
    import lightning_hpu  # noqa: F401  (Ray runs this function in worker processes: register the HPU there)

    out = Path(config["out"])
    strategies = {
        "ddp": lambda: RayDDPStrategy(),
        "fsdp": lambda: RayFSDPStrategy(),
        "deepspeed": lambda: RayDeepSpeedStrategy(stage=2),
    }
    for name in STRATEGIES:
        trainer = quiet_trainer(
            accelerator="hpu",
            devices="auto",
            strategy=strategies[name](),
            plugins=[RayLightningEnvironment()],
            callbacks=[RayTrainReportCallback(), Probe(name, out)],
            max_epochs=EPOCHS,
            enable_checkpointing=False,
        )
        trainer = prepare_trainer(trainer)
        trainer.fit(RegressionModel())


def main(out: Path) -> None:
    ray.init(num_cpus=2, include_dashboard=False)  # the HPUs are found as on a Gaudi node
    try:
        trainer = TorchTrainer(
            train_func,
            train_loop_config={"out": str(out)},
            torch_config=TorchConfig(backend="hccl"),
            scaling_config=ScalingConfig(num_workers=2, resources_per_worker={"HPU": 1}),
            run_config=RunConfig(
                storage_path=str(out / "ray_results"),
                name="hpu",
                checkpoint_config=CheckpointConfig(num_to_keep=None),
            ),
        )
        result = trainer.fit()
        kept = [checkpoint.path for checkpoint, _ in result.best_checkpoints]
        (out / "checkpoints.json").write_text(json.dumps({"kept": kept, "hpus": ray.cluster_resources().get("HPU")}))
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
