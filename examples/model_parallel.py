"""Model parallelism on HPUs: tensor parallelism inside each block, FSDP2 across the data-parallel groups.

``configure_model`` splits each feed-forward block over the ``"tensor_parallel"`` dimension of
``self.device_mesh`` (first linear by columns, second by rows) and shards every block with ``fully_shard`` over the
``"data_parallel"`` dimension. The strategy makes FSDP2 reduce with ``SUM`` (HCCL has no ``AVG``) and saves
sharded checkpoints. Eager mode only (leave ``PT_HPU_LAZY_MODE`` unset or ``0``).

Two HPUs, tensor parallel over both (the CPU stand-in emulates them without a Gaudi)::

    LIGHTNING_HPU_BACKEND=cpu LIGHTNING_HPU_CPU_DEVICES=2 python examples/model_parallel.py --devices 2 --max-steps 4

One Gaudi node: 8 HPUs as 2 data-parallel groups of 4-way tensor parallelism::

    python examples/model_parallel.py --devices 8 --tensor-parallel 4
"""

from __future__ import annotations

import argparse

import torch
from lightning.pytorch import LightningModule, Trainer
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from lightning_hpu import HPUModelParallelStrategy, run_script

WIDTH, LAYERS = 64, 4


class FeedForward(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = nn.Linear(WIDTH, 4 * WIDTH)
        self.down = nn.Linear(4 * WIDTH, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(nn.functional.gelu(self.up(x)))


class DeepRegressor(LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.model = nn.Sequential(*(FeedForward() for _ in range(LAYERS)), nn.Linear(WIDTH, 1))

    def configure_model(self) -> None:
        from torch.distributed.fsdp import fully_shard
        from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

        tensor_parallel, data_parallel = self.device_mesh["tensor_parallel"], self.device_mesh["data_parallel"]
        for block in self.model[:-1]:
            parallelize_module(block, tensor_parallel, {"up": ColwiseParallel(), "down": RowwiseParallel()})
            fully_shard(block, mesh=data_parallel)
        fully_shard(self.model, mesh=data_parallel)  # the root: called as a whole, so FSDP2 gathers the rest

    def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
        x, y = batch
        loss = nn.functional.mse_loss(self.model(x), y)
        self.log("train_loss", loss, sync_dist=True, prog_bar=True)
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(self.parameters(), lr=1e-3)

    def train_dataloader(self) -> DataLoader:
        generator = torch.Generator().manual_seed(0)
        x = torch.randn(2048, WIDTH, generator=generator)
        y = x[:, :8].sum(dim=1, keepdim=True).tanh()
        # The Trainer gives each data-parallel group its own part; ranks of one TP group see the same batches.
        return DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--devices", type=int, default=8, help="HPUs per node (default 8)")
    parser.add_argument("--num-nodes", type=int, default=1)
    parser.add_argument("--tensor-parallel", type=int, default=2, help="HPUs per tensor-parallel group")
    parser.add_argument("--max-steps", type=int, default=200)
    args = parser.parse_args()

    world = args.devices * args.num_nodes
    strategy = HPUModelParallelStrategy(
        data_parallel_size=world // args.tensor_parallel, tensor_parallel_size=args.tensor_parallel
    )
    trainer = Trainer(
        accelerator="hpu",
        devices=args.devices,
        num_nodes=args.num_nodes,
        strategy=strategy,
        max_steps=args.max_steps,
        logger=False,
        enable_checkpointing=False,
    )
    trainer.fit(DeepRegressor())
    if trainer.is_global_zero:
        mesh = dict(zip(strategy.device_mesh.mesh_dim_names or (), strategy.device_mesh.shape, strict=True))
        loss = float(trainer.callback_metrics["train_loss"])
        print(f"model parallel on {trainer.world_size} HPUs {mesh}: train_loss={loss:.4f}")


if __name__ == "__main__":
    run_script(main)
