"""Two-process scenarios for eager mode + torch.compile, run by
``tests/lightning_hpu/pytorch/callbacks/test_compile_multiprocess.py``.

Lightning's launcher re-runs this script for each local rank. Each rank trains repeated blocks compiled by
``HPUCompile`` (regional), in bf16-mixed with gradient accumulation and ``last_batch`` applied to its own share of
the data, once with DDP and once with fast DDP, and writes what it saw to ``<out>/rank<rank>.json``.

Usage: ``python compile_scenario.py OUT_DIR``, or ``main(OUT_DIR)`` from ``two_device_scenario.py``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import torch
from lightning.pytorch import LightningModule
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from lightning_hpu import HPUCompile, HPUParallelStrategy, HPURecompileMonitor, get_backend
from tests.helpers.dynamo import reset_dynamo
from tests.helpers.models import Block
from tests.helpers.standin import counters as standin_counters
from tests.helpers.trainer import quiet_trainer

SAMPLES = 20  # 10 per rank: batches of 4 leave 2 over


class Blocks(LightningModule):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.blocks = nn.Sequential(Block(8), Block(8), Block(8))
        self.head = nn.Linear(8, 1)
        self.batch_sizes: list[int] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(x))

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        self.batch_sizes.append(x.shape[0])
        loss = nn.functional.mse_loss(self(x).float(), y)
        self.log("loss", loss, sync_dist=True)
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.05)

    def train_dataloader(self) -> DataLoader:
        x = torch.randn(SAMPLES, 8, generator=torch.Generator().manual_seed(1))
        return DataLoader(TensorDataset(x, x[:, :1]), batch_size=4)


def _max_diff_between_ranks(module: nn.Module) -> float:
    flat = torch.cat([p.detach().float().flatten() for p in module.parameters()])
    gathered = [torch.zeros_like(flat) for _ in range(torch.distributed.get_world_size())]
    torch.distributed.all_gather(gathered, flat)
    return max(float((g - gathered[0]).abs().max()) for g in gathered)


def run(fast_ddp: bool, last_batch: str) -> dict[str, Any]:
    reset_dynamo()  # each scenario compiles from scratch
    model = Blocks()
    monitor = HPURecompileMonitor(warmup_steps=2)
    backend = get_backend()
    assert backend is not None
    compiled_before = standin_counters().compiled_graphs
    trainer = quiet_trainer(
        accelerator="hpu",
        devices=2,
        strategy=HPUParallelStrategy(fast_ddp=fast_ddp, last_batch=last_batch),
        precision="bf16-mixed",
        accumulate_grad_batches=2,
        max_epochs=2,
        callbacks=[HPUCompile(modules=[Block]), monitor],
        enable_checkpointing=False,
    )
    trainer.fit(model)
    return {
        "batch_sizes": model.batch_sizes,
        "per_step": monitor.per_step,
        "compiled_graphs": standin_counters().compiled_graphs - compiled_before,
        "max_diff_between_ranks": _max_diff_between_ranks(model),
        "global_step": trainer.global_step,
    }


def main(out: Path) -> None:
    report = {"ddp_pad": run(fast_ddp=False, last_batch="pad"), "fast_drop": run(fast_ddp=True, last_batch="drop")}
    rank = torch.distributed.get_rank()
    (out / f"rank{rank}.json").write_text(json.dumps(report))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
