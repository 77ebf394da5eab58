"""Data-parallel training on several HPUs of one node, or on several nodes.

One Gaudi node, all 8 HPUs (Lightning starts one process per HPU)::

    python examples/multi_hpu.py --devices 8

Two nodes of 8 HPUs: run the same command on each node, with the node's rank::

    # on node 0 (its address is MASTER_ADDR)
    MASTER_ADDR=10.0.0.1 MASTER_PORT=29500 NODE_RANK=0 WORLD_SIZE=16 \
        python examples/multi_hpu.py --devices 8 --num-nodes 2
    # on node 1
    MASTER_ADDR=10.0.0.1 MASTER_PORT=29500 NODE_RANK=1 WORLD_SIZE=16 \
        python examples/multi_hpu.py --devices 8 --num-nodes 2

Without a Gaudi, the CPU stand-in emulates the HPUs (two here)::

    LIGHTNING_HPU_BACKEND=cpu LIGHTNING_HPU_CPU_DEVICES=2 python examples/multi_hpu.py --devices 2 --max-steps 4

``--fast-ddp`` averages the gradients with one fused all-reduce per optimizer step instead of DDP's buckets
(``--bf16-wire`` sends them in bf16); ``--bucket-cap-mb`` sets DDP's gradient bucket size (230 MB by default on HPU,
with gradients as bucket views, as optimum-habana runs DDP on Gaudi).
"""

from __future__ import annotations

import argparse
from typing import Any

import torch
from lightning.pytorch import LightningModule, Trainer
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from lightning_hpu import HPUAccelerator, HPUParallelStrategy, run_script


class Regressor(LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))

    def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x), y)
        # sync_dist: the logged value is the mean over every HPU of every node.
        self.log("train_loss", loss, sync_dist=True, prog_bar=True)
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(self.parameters(), lr=1e-3)

    def train_dataloader(self) -> DataLoader:
        generator = torch.Generator().manual_seed(0)
        x = torch.randn(4096, 32, generator=generator)
        y = x[:, :4].sum(dim=1, keepdim=True)
        # Lightning gives each process its own shard through a DistributedSampler.
        return DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--devices", type=int, default=8, help="HPUs per node (default 8)")
    parser.add_argument("--num-nodes", type=int, default=1, help="number of nodes (default 1)")
    parser.add_argument("--max-steps", type=int, default=200)
    parser.add_argument("--accumulate", type=int, default=1, help="gradient accumulation steps")
    parser.add_argument("--fast-ddp", action="store_true", help="one fused gradient all-reduce per step")
    parser.add_argument("--bf16-wire", action="store_true", help="with --fast-ddp: send the gradients in bf16")
    parser.add_argument("--bucket-cap-mb", type=int, default=None, help="DDP gradient bucket size in MB (HPU: 230)")
    args = parser.parse_args()

    if args.fast_ddp:
        strategy = HPUParallelStrategy(fast_ddp=True, reduce_dtype=torch.bfloat16 if args.bf16_wire else None)
    else:
        ddp_options: dict[str, Any] = {}
        if args.bucket_cap_mb is not None:
            ddp_options["bucket_cap_mb"] = args.bucket_cap_mb
        strategy = HPUParallelStrategy(**ddp_options)

    trainer = Trainer(
        accelerator=HPUAccelerator(),
        devices=args.devices,
        num_nodes=args.num_nodes,
        strategy=strategy,
        max_steps=args.max_steps,
        accumulate_grad_batches=args.accumulate,
        gradient_clip_val=1.0,
        logger=False,
        enable_checkpointing=False,
    )
    trainer.fit(Regressor())
    if trainer.is_global_zero:
        print(f"trained on {trainer.world_size} HPUs: train_loss={float(trainer.callback_metrics['train_loss']):.4f}")


if __name__ == "__main__":
    run_script(main)
