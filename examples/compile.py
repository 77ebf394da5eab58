"""Train a small transformer-like model in eager mode with regional torch.compile, counting recompilations.

Every block of the model is compiled on its own (``HPUCompile(modules=[Block])``): identical blocks share one
compiled graph, so compile time does not grow with depth. ``HPURecompileMonitor`` counts graph compilations per
step, and the strategy pads the ragged last batch so no new shape appears at the end of an epoch.

On a Gaudi (eager mode, the default):   python examples/compile.py
Without a Gaudi:                         LIGHTNING_HPU_BACKEND=cpu python examples/compile.py
Whole forward instead of blocks:         ... python examples/compile.py --compile forward
Legacy lazy mode (no compile):           PT_HPU_LAZY_MODE=1 ... python examples/compile.py --compile none
"""

from __future__ import annotations

import argparse
from typing import Any

import torch
from lightning.pytorch import LightningModule, Trainer
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from lightning_hpu import HPUCompile, HPURecompileMonitor, SingleHPUStrategy, run_script


class Block(nn.Module):
    """Pre-norm self-attention and MLP with residuals, as in a transformer layer."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(width)
        self.attention = nn.MultiheadAttention(width, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm1(x)
        x = x + self.attention(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class TinyTransformer(LightningModule):
    """Classifies token sequences; ``depth`` identical blocks."""

    def __init__(self, vocab: int = 64, width: int = 32, heads: int = 4, depth: int = 4, classes: int = 4) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.blocks = nn.Sequential(*[Block(width, heads) for _ in range(depth)])
        self.head = nn.Linear(width, classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(self.embed(tokens)).mean(dim=1))

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        tokens, labels = batch
        loss = nn.functional.cross_entropy(self(tokens), labels)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(self.parameters(), lr=3e-3)


def synthetic_sequences(samples: int, length: int = 16, vocab: int = 64, classes: int = 4) -> TensorDataset:
    """Token sequences whose class is the most frequent token's residue, so the model has something to learn."""
    generator = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, vocab, (samples, length), generator=generator)
    labels = tokens.mode(dim=1).values % classes
    return TensorDataset(tokens, labels)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compile", choices=["blocks", "forward", "none"], default="blocks")
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--samples", type=int, default=200, help="200 in batches of 32: a ragged last batch")
    parser.add_argument("--max-epochs", type=int, default=2)
    parser.add_argument("--precision", default="bf16-mixed")
    args = parser.parse_args()

    model = TinyTransformer(depth=args.depth)
    monitor = HPURecompileMonitor(warmup_steps=3)
    callbacks: list[Any] = [monitor]
    if args.compile != "none":
        callbacks.append(HPUCompile(modules=[Block] if args.compile == "blocks" else None))
    trainer = Trainer(
        accelerator="hpu",
        strategy=SingleHPUStrategy(last_batch="pad"),
        precision=args.precision,
        max_epochs=args.max_epochs,
        callbacks=callbacks,
        enable_checkpointing=False,
        logger=False,
    )
    loader = DataLoader(synthetic_sequences(args.samples), batch_size=32, shuffle=True)
    trainer.fit(model, loader)
    print(f"compilations per step: {monitor.per_step}")
    print(f"total={monitor.total} after_warmup={sum(monitor.per_step[monitor.warmup_steps :])}")


if __name__ == "__main__":
    run_script(main)
