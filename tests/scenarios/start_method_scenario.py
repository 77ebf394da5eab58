"""Run by test_parallel_multiprocess.py: HPUParallelStrategy(start_method="spawn") with the Trainer and with Fabric.

Two emulated HPUs (``LIGHTNING_HPU_CPU_DEVICES=2``); prints one JSON line with what the main process got back.
"""

from __future__ import annotations

import json

import torch
from lightning.fabric import Fabric
from lightning.pytorch.demos.boring_classes import BoringModel

from lightning_hpu import HPUParallelStrategy
from lightning_hpu.fabric.strategies import HPUParallelStrategy as FabricHPUParallelStrategy
from tests.helpers.trainer import quiet_trainer


def rank_sum(fabric: Fabric) -> dict[str, float | int]:
    total = fabric.all_reduce(torch.tensor([float(fabric.global_rank + 1)]), reduce_op="sum")
    return {"world_size": fabric.world_size, "sum": float(total.item())}


def main() -> None:
    model = BoringModel()
    before = [p.detach().clone() for p in model.parameters()]
    trainer = quiet_trainer(
        accelerator="hpu",
        devices=2,
        strategy=HPUParallelStrategy(start_method="spawn"),
        max_steps=2,
        limit_val_batches=0,
        enable_checkpointing=False,
    )
    trainer.fit(model)
    trained = any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
    fabric = Fabric(accelerator="hpu", devices=2, strategy=FabricHPUParallelStrategy(start_method="spawn"))
    report = {
        "trainer_start_method": trainer.strategy._start_method,  # type: ignore[attr-defined]
        "trainer_world_size": trainer.world_size,
        "weights_came_back_trained": trained,
        "fabric": fabric.launch(rank_sum),
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
