"""Fully sharded data parallel (FSDP) on HPUs: a small transformer, sharded block by block.

Each transformer block is its own FSDP unit (``auto_wrap_policy``) and recomputes its activations in the backward
(``activation_checkpointing_policy``); compute runs in bf16 with fp32 master weights (``precision="bf16-mixed"``).
Sharded training runs in eager mode (leave ``PT_HPU_LAZY_MODE`` unset or ``0``).

One Gaudi node, all 8 HPUs::

    python examples/fsdp.py --devices 8

Two nodes of 8 HPUs (run on each node with its rank; ``--hybrid`` shards within a node, replicates across)::

    MASTER_ADDR=10.0.0.1 MASTER_PORT=29500 NODE_RANK=0 WORLD_SIZE=16 \
        python examples/fsdp.py --devices 8 --num-nodes 2 --hybrid
    MASTER_ADDR=10.0.0.1 MASTER_PORT=29500 NODE_RANK=1 WORLD_SIZE=16 \
        python examples/fsdp.py --devices 8 --num-nodes 2 --hybrid

Without a Gaudi, on the CPU stand-in with two emulated HPUs::

    LIGHTNING_HPU_BACKEND=cpu LIGHTNING_HPU_CPU_DEVICES=2 python examples/fsdp.py --devices 2 --max-steps 4
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from lightning.pytorch import LightningModule, Trainer
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from lightning_hpu import HPUFSDPStrategy, run_script

VOCAB, WIDTH, HEADS, LAYERS, CONTEXT = 256, 128, 4, 4, 32


class Block(nn.Module):
    """Pre-norm self-attention and MLP with residuals: the unit FSDP shards and activation checkpointing reruns."""

    def __init__(self) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(WIDTH)
        self.attention = nn.MultiheadAttention(WIDTH, HEADS, batch_first=True)
        self.norm2 = nn.LayerNorm(WIDTH)
        self.mlp = nn.Sequential(nn.Linear(WIDTH, 4 * WIDTH), nn.GELU(), nn.Linear(4 * WIDTH, WIDTH))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm1(x)
        causal = torch.triu(torch.ones(x.shape[1], x.shape[1], dtype=torch.bool, device=x.device), diagonal=1)
        x = x + self.attention(h, h, h, attn_mask=causal, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class TinyLanguageModel(LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, WIDTH)
        self.blocks = nn.Sequential(*(Block() for _ in range(LAYERS)))
        self.head = nn.Linear(WIDTH, VOCAB)

    def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
        tokens = batch[0]
        logits = self.head(self.blocks(self.embedding(tokens[:, :-1])))
        loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB), tokens[:, 1:].reshape(-1))
        self.log("train_loss", loss, sync_dist=True, prog_bar=True)  # the mean over every HPU (HCCL-safe)
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        # Created after sharding: the optimizer holds (and its state shards with) this rank's parameter shards.
        return torch.optim.AdamW(self.parameters(), lr=1e-3)

    def train_dataloader(self) -> DataLoader:
        generator = torch.Generator().manual_seed(0)
        start = torch.randint(0, VOCAB, (512, 1), generator=generator)
        tokens = (start + torch.arange(CONTEXT + 1)) % VOCAB  # counting sequences: learnable next-token targets
        return DataLoader(TensorDataset(tokens), batch_size=8, shuffle=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--devices", type=int, default=8, help="HPUs per node (default 8)")
    parser.add_argument("--num-nodes", type=int, default=1, help="number of nodes (default 1)")
    parser.add_argument("--max-steps", type=int, default=200)
    parser.add_argument("--hybrid", action="store_true", help="HYBRID_SHARD: shard within a node, replicate across")
    parser.add_argument("--checkpoint", type=Path, default=None, help="save a sharded checkpoint folder here")
    args = parser.parse_args()

    strategy = HPUFSDPStrategy(
        auto_wrap_policy={Block},
        activation_checkpointing_policy={Block},
        sharding_strategy="HYBRID_SHARD" if args.hybrid else "FULL_SHARD",
        state_dict_type="sharded",
    )
    trainer = Trainer(
        accelerator="hpu",
        devices=args.devices,
        num_nodes=args.num_nodes,
        strategy=strategy,
        precision="bf16-mixed",
        max_steps=args.max_steps,
        gradient_clip_val=1.0,  # by norm, across the shards
        logger=False,
        enable_checkpointing=False,
    )
    trainer.fit(TinyLanguageModel())
    if args.checkpoint is not None:
        trainer.save_checkpoint(args.checkpoint)  # resume later with trainer.fit(model, ckpt_path=args.checkpoint)
    if trainer.is_global_zero:
        loss = float(trainer.callback_metrics["train_loss"])
        print(f"FSDP on {trainer.world_size} HPUs ({type(trainer.strategy).__name__}): train_loss={loss:.4f}")


if __name__ == "__main__":
    run_script(main)
