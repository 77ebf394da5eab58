"""Ray Train on Gaudi: Ray's Lightning strategies with ``accelerator="hpu"``, one HPU per Ray worker.

The training function is written as in Ray's Lightning guide (``RayDDPStrategy``, ``RayFSDPStrategy`` or
``RayDeepSpeedStrategy``, ``RayLightningEnvironment``, ``RayTrainReportCallback``, ``prepare_trainer``) with two
additions: ``accelerator="hpu"`` and ``import lightning_hpu`` inside the function, which Ray runs in its worker
processes. Ray finds a Gaudi node's HPUs itself; each worker asks for one (``resources_per_worker={"HPU": 1}``),
and the process group is HCCL's (``TorchConfig(backend="hccl")``).

One Gaudi node, 8 workers::

    python examples/ray_train.py --num-workers 8 --strategy fsdp

A Ray cluster of Gaudi nodes (``ray start --head`` on one, ``ray start --address=<head>:6379`` on the others)::

    python examples/ray_train.py --address auto --num-workers 16

Without a Gaudi, the CPU stand-in emulates the node's HPUs::

    LIGHTNING_HPU_BACKEND=cpu LIGHTNING_HPU_CPU_DEVICES=2 python examples/ray_train.py --num-workers 2 --max-epochs 1
"""

from __future__ import annotations

import argparse
import os
from typing import Any

import ray
import torch
from lightning.pytorch import LightningModule, Trainer
from ray.train import RunConfig, ScalingConfig
from ray.train.lightning import (
    RayDDPStrategy,
    RayDeepSpeedStrategy,
    RayFSDPStrategy,
    RayLightningEnvironment,
    RayTrainReportCallback,
    prepare_trainer,
)
from ray.train.torch import TorchConfig, TorchTrainer
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from lightning_hpu import HPUAccelerator, HPUConfigurationError, run_script
from lightning_hpu.runtime import require_backend

STRATEGIES = {"ddp": RayDDPStrategy, "fsdp": RayFSDPStrategy, "deepspeed": RayDeepSpeedStrategy}


class Regressor(LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))

    def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss, sync_dist=True)
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(self.parameters(), lr=1e-3)

    def train_dataloader(self) -> DataLoader:
        generator = torch.Generator().manual_seed(0)
        x = torch.randn(2048, 32, generator=generator)
        y = x[:, :4].sum(dim=1, keepdim=True)
        return DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)  # each worker gets its shard


def train_func(config: dict[str, Any]) -> None:
    """Runs in every Ray worker, on the HPU Ray assigned to it."""
    import lightning_hpu  # noqa: F401  (registers accelerator="hpu" in the worker process)

    strategy = STRATEGIES[config["strategy"]](**({"stage": 2} if config["strategy"] == "deepspeed" else {}))
    trainer = Trainer(
        accelerator="hpu",
        devices="auto",
        strategy=strategy,  # rebuilt on HPU as lightning_hpu.pytorch.ray's twin, with the same arguments
        plugins=[RayLightningEnvironment()],
        callbacks=[RayTrainReportCallback()],  # Ray keeps a checkpoint per epoch, written by HPUCheckpointIO
        max_epochs=config["max_epochs"],
        enable_checkpointing=False,
        enable_progress_bar=False,
        logger=False,
    )
    trainer = prepare_trainer(trainer)
    trainer.fit(Regressor())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--num-workers", type=int, default=8, help="Ray workers, one HPU each (default 8)")
    parser.add_argument("--strategy", choices=sorted(STRATEGIES), default="ddp")
    parser.add_argument("--max-epochs", type=int, default=3)
    parser.add_argument("--address", default=None, help="a running Ray cluster ('auto'); default: start one here")
    parser.add_argument("--storage-path", default="ray_results", help="where Ray keeps the checkpoints")
    args = parser.parse_args()

    if args.address is None:
        # Ray starts on this node: it needs an HPU per worker, else the job would wait for them forever.
        require_backend()  # no Gaudi and no stand-in: one sentence saying so
        visible = HPUAccelerator.auto_device_count()
        if visible < args.num_workers:
            raise HPUConfigurationError(
                f"--num-workers {args.num_workers} needs one HPU per Ray worker on this node, but {visible} are"
                " visible: pass fewer workers, or --address of a Ray cluster with more HPUs."
            )
    ray.init(address=args.address, include_dashboard=False)
    try:
        trainer = TorchTrainer(
            train_func,
            train_loop_config={"strategy": args.strategy, "max_epochs": args.max_epochs},
            torch_config=TorchConfig(backend="hccl"),
            scaling_config=ScalingConfig(num_workers=args.num_workers, resources_per_worker={"HPU": 1}),
            run_config=RunConfig(storage_path=os.path.abspath(args.storage_path)),
        )
        result = trainer.fit()
        print(f"trained on {args.num_workers} HPUs: train_loss={result.metrics['train_loss']:.4f}")
        print(f"last checkpoint: {result.checkpoint.path if result.checkpoint else None}")
    finally:
        ray.shutdown()


if __name__ == "__main__":
    run_script(main)
