"""Context parallelism on HPUs: a small causal language model whose sequences are split across HPUs.

``HPUModelParallelStrategy(context_parallel_size=P)`` cuts every batch along its sequence dimension, so each of the P
ranks of a ``"context_parallel"`` group holds ``1 / P`` of every sequence's activations. The model's
``ContextParallelAttention`` exchanges heads for sequence with two all-to-alls over HCCL, so causal attention still
sees the whole sequence, and the strategy averages gradients over the data x context parallel ranks. The batch holds
labels shifted *before* the split and explicit position ids, since a rank's tokens do not start at position 0.

Two HPUs, each with half of every sequence (the CPU stand-in emulates them without a Gaudi)::

    LIGHTNING_HPU_BACKEND=cpu LIGHTNING_HPU_CPU_DEVICES=2 python examples/context_parallel.py --devices 2

One Gaudi node: 8 HPUs as 2 data-parallel groups of 4-way context parallelism, parameters sharded by FSDP2::

    python examples/context_parallel.py --devices 8 --context-parallel 4 --fsdp --sequence 4096
"""

from __future__ import annotations

import argparse

import torch
from lightning.pytorch import LightningModule, Trainer
from torch import nn
from torch.utils.data import DataLoader, Dataset

from lightning_hpu import ContextParallelAttention, HPUModelParallelStrategy, gradient_mesh, run_script

VOCAB, WIDTH, HEADS, LAYERS = 64, 32, 4, 2


class Block(nn.Module):
    """A pre-norm transformer block whose attention runs over the whole (split) sequence."""

    def __init__(self) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(WIDTH), nn.LayerNorm(WIDTH)
        self.qkv, self.out = nn.Linear(WIDTH, 3 * WIDTH, bias=False), nn.Linear(WIDTH, WIDTH)
        self.attention = ContextParallelAttention(num_heads=HEADS)  # SDPA on each rank's heads, whole sequence
        self.mlp = nn.Sequential(nn.Linear(WIDTH, 4 * WIDTH), nn.GELU(), nn.Linear(4 * WIDTH, WIDTH))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, _ = x.shape  # length: this rank's part of the sequence
        q, k, v = (
            t.reshape(batch, length, HEADS, WIDTH // HEADS).transpose(1, 2)
            for t in self.qkv(self.norm1(x)).chunk(3, dim=-1)
        )
        attended = self.attention(q, k, v, is_causal=True).transpose(1, 2).reshape(batch, length, WIDTH)
        x = x + self.out(attended)
        return x + self.mlp(self.norm2(x))


class TinyCausalLM(nn.Module):
    def __init__(self, max_length: int) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.tokens, self.positions = nn.Embedding(VOCAB, WIDTH), nn.Embedding(max_length, WIDTH)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.head = nn.Linear(WIDTH, VOCAB)

    def forward(self, input_ids: torch.Tensor, position_ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy of next-token prediction over this rank's tokens (labels shifted before the split)."""
        x = self.tokens(input_ids) + self.positions(position_ids)
        for block in self.blocks:
            x = block(x)
        return nn.functional.cross_entropy(self.head(x).flatten(0, 1), labels.flatten())


class RandomTokens(Dataset[dict[str, torch.Tensor]]):
    """Sequences of random tokens with their next-token labels and positions."""

    def __init__(self, count: int, length: int) -> None:
        self.tokens = torch.randint(0, VOCAB, (count, length + 1), generator=torch.Generator().manual_seed(1))
        self.length = length

    def __len__(self) -> int:
        return len(self.tokens)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        tokens = self.tokens[index]
        return {"input_ids": tokens[:-1], "labels": tokens[1:], "position_ids": torch.arange(self.length)}


class LanguageModel(LightningModule):
    """The language model with replicated parameters: no ``configure_model`` is needed, the strategy averages the
    gradients over the data x context parallel ranks."""

    def __init__(self, length: int, batch_size: int = 2, samples: int = 16) -> None:
        super().__init__()
        self.model = TinyCausalLM(length)
        self.length, self.batch_size, self.samples = length, batch_size, samples
        self.global_losses: list[float] = []

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        loss = self.model(**batch)  # over this rank's tokens; the mean over all ranks is the batch's loss
        global_loss = self.trainer.strategy.reduce(loss.detach(), reduce_op="mean")
        self.global_losses.append(float(global_loss))
        self.log("train_loss", global_loss, prog_bar=True)
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(self.parameters(), lr=1e-2)

    def train_dataloader(self) -> DataLoader:
        # The strategy's sampler splits over data-parallel ranks only: context-parallel ranks get the same batch.
        return DataLoader(RandomTokens(self.samples, self.length), batch_size=self.batch_size)


class ShardedLanguageModel(LanguageModel):
    """The same model with its parameters sharded by FSDP2 over every rank that holds a replica (data x context)."""

    def configure_model(self) -> None:
        from torch.distributed.fsdp import fully_shard

        for block in self.model.blocks:
            fully_shard(block, mesh=gradient_mesh(self.device_mesh))
        fully_shard(self.model, mesh=gradient_mesh(self.device_mesh))


def train(model: LanguageModel, devices: int, context_parallel: int, steps: int, root: str | None = None) -> None:
    """Fit ``model`` with each sequence split over ``context_parallel`` of the ``devices``."""
    trainer = Trainer(
        accelerator="hpu",
        devices=devices,
        strategy=HPUModelParallelStrategy(context_parallel_size=context_parallel),
        max_steps=steps,
        default_root_dir=root,
        logger=False,
        enable_checkpointing=False,
        enable_model_summary=False,
        enable_progress_bar=False,
    )
    trainer.fit(model)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--devices", type=int, default=2)
    parser.add_argument("--context-parallel", type=int, default=2)
    parser.add_argument("--sequence", type=int, default=32)
    parser.add_argument("--max-steps", type=int, default=4)
    parser.add_argument("--fsdp", action="store_true", help="shard parameters with FSDP2 over data x context ranks")
    args = parser.parse_args()
    model = (ShardedLanguageModel if args.fsdp else LanguageModel)(args.sequence)
    train(model, args.devices, args.context_parallel, args.max_steps)
    if model.global_rank == 0:
        losses = ", ".join(f"{loss:.4f}" for loss in model.global_losses)
        print(f"context parallel {args.context_parallel} on {args.devices} HPUs, losses: {losses}")


if __name__ == "__main__":
    run_script(main)
