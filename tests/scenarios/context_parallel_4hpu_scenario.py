"""Context parallelism beside data and tensor parallelism on 4 stand-in HPUs: a check run by hand, not by the suite.

The suite's two-rank launch covers ``context_parallel_size=2`` alone
(``tests/lightning_hpu/distributed/test_context_parallel.py``); a 4-rank
launch would add half a minute to it. This script trains a small causal language model (separate query, key and value
projections, so tensor parallelism can split them by columns) for 4 SGD steps on ``data x context x tensor`` and
compares the losses with one plain PyTorch process over the same global batches; it exits with status 1 if they
differ by more than ``rtol=1e-5``::

    LIGHTNING_HPU_BACKEND=cpu LIGHTNING_HPU_CPU_DEVICES=4 python tests/scenarios/context_parallel_4hpu_scenario.py 2 2 1
    LIGHTNING_HPU_BACKEND=cpu LIGHTNING_HPU_CPU_DEVICES=4 python tests/scenarios/context_parallel_4hpu_scenario.py 2 2 1
    --fsdp
    LIGHTNING_HPU_BACKEND=cpu LIGHTNING_HPU_CPU_DEVICES=4 python tests/scenarios/context_parallel_4hpu_scenario.py 1 2 2

(arguments: data, context and tensor parallel sizes).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
from lightning.pytorch import LightningModule
from torch import nn
from torch.utils.data import DataLoader

from lightning_hpu import ContextParallelAttention, HPUModelParallelStrategy, gradient_mesh

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run by hand: the repository, for tests.helpers
from tests.helpers.trainer import quiet_trainer

WIDTH, HEADS, LENGTH, VOCAB, STEPS, MICRO_BATCH = 32, 4, 16, 64, 4, 2
RTOL = 1e-5


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(WIDTH)
        self.q, self.k, self.v = (nn.Linear(WIDTH, WIDTH, bias=False) for _ in range(3))
        self.out = nn.Linear(WIDTH, WIDTH)
        self.attention = ContextParallelAttention()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, _ = x.shape
        h = self.norm(x)
        # -1 heads: all of them, or this rank's under tensor parallelism
        q, k, v = (p(h).reshape(batch, length, -1, WIDTH // HEADS).transpose(1, 2) for p in (self.q, self.k, self.v))
        attended = self.attention(q, k, v, is_causal=True).transpose(1, 2).reshape(batch, length, -1)
        return x + self.out(attended)


class TinyLM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.tokens, self.positions = nn.Embedding(VOCAB, WIDTH), nn.Embedding(LENGTH, WIDTH)
        self.blocks = nn.ModuleList(Block() for _ in range(2))
        self.head = nn.Linear(WIDTH, VOCAB)

    def forward(self, input_ids: torch.Tensor, position_ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        x = self.tokens(input_ids) + self.positions(position_ids)
        for block in self.blocks:
            x = block(x)
        return nn.functional.cross_entropy(self.head(x).flatten(0, 1), labels.flatten())


def global_batches(data_parallel: int) -> list[dict[str, torch.Tensor]]:
    batch = MICRO_BATCH * data_parallel
    tokens = torch.randint(0, VOCAB, (STEPS * batch, LENGTH + 1), generator=torch.Generator().manual_seed(1))
    positions = torch.arange(LENGTH).expand(batch, LENGTH)
    return [
        {"input_ids": part[:, :-1], "labels": part[:, 1:], "position_ids": positions} for part in tokens.split(batch)
    ]


def reference(data_parallel: int) -> list[float]:
    model = TinyLM()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for batch in global_batches(data_parallel):
        optimizer.zero_grad()
        loss = model(**batch)
        loss.backward()
        optimizer.step()
        losses.append(float(loss))
    return losses


class Module(LightningModule):
    def __init__(self, fsdp: bool) -> None:
        super().__init__()
        self.model, self.fsdp = TinyLM(), fsdp
        self.losses: list[float] = []

    def configure_model(self) -> None:
        from torch.distributed.fsdp import fully_shard
        from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

        plan = {"q": ColwiseParallel(), "k": ColwiseParallel(), "v": ColwiseParallel(), "out": RowwiseParallel()}
        for block in self.model.blocks:
            if self.device_mesh["tensor_parallel"].size() > 1:
                parallelize_module(block, self.device_mesh["tensor_parallel"], plan)
            if self.fsdp:
                fully_shard(block, mesh=gradient_mesh(self.device_mesh))
        if self.fsdp:
            fully_shard(self.model, mesh=gradient_mesh(self.device_mesh))

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        loss = self.model(**batch)
        self.losses.append(float(self.trainer.strategy.reduce(loss.detach(), reduce_op="mean")))
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self) -> DataLoader:
        # Each data-parallel rank takes its rows of every global batch; its context and tensor ranks the same ones.
        mesh = self.device_mesh["data_parallel"]
        rank = mesh.get_local_rank()
        rows = [
            {key: value.chunk(mesh.size())[rank] for key, value in batch.items()}
            for batch in global_batches(mesh.size())
        ]
        return DataLoader(rows, batch_size=None)


def main() -> None:
    parser = argparse.ArgumentParser()
    for name in ("data", "context", "tensor"):
        parser.add_argument(name, type=int)
    parser.add_argument("--fsdp", action="store_true")
    args = parser.parse_args()
    module = Module(args.fsdp)
    strategy = HPUModelParallelStrategy(args.data, args.tensor, context_parallel_size=args.context)
    trainer = quiet_trainer(
        accelerator="hpu",
        devices=args.data * args.context * args.tensor,
        strategy=strategy,
        max_steps=STEPS,
        use_distributed_sampler=False,
        enable_checkpointing=False,
    )
    trainer.fit(module)
    expected = reference(args.data)
    worst = max(abs(got - want) / want for got, want in zip(module.losses, expected, strict=True))
    if trainer.global_rank == 0:
        mesh = trainer.strategy.device_mesh
        print(f"mesh {dict(zip(mesh.mesh_dim_names or (), mesh.shape, strict=True))} fsdp={args.fsdp}")
        print(f"losses    {[round(loss, 6) for loss in module.losses]}")
        print(f"reference {[round(loss, 6) for loss in expected]}")
        print(f"largest relative difference {worst:.1e} (tolerance {RTOL:.0e})")
    if worst > RTOL:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
