"""The check's model and data: a small causal transformer trained on fixed random token sequences.

Everything is synthetic and seeded (nothing is downloaded), so every mode and precision starts from the same weights
and sees the same batches in the same order: their losses are comparable step for step. The sequences are few and
repeat every epoch, so a few steps memorise them and the loss falls on any working device.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from lightning.pytorch import LightningModule
from torch import Tensor, nn
from torch.utils.data import DataLoader, TensorDataset
from typing_extensions import override


@dataclass(frozen=True)
class Size:
    """The model's and the data's sizes (multiples of 16, as fp8 matmuls on a Gaudi want)."""

    vocab: int = 64
    width: int = 64
    heads: int = 4
    layers: int = 2
    sequence: int = 32
    batch: int = 8
    sequences: int = 16

    def flops_per_sample(self, parameters: int) -> float:
        """Training FLOPs of one sequence: 6 per parameter and token (forward and backward matmuls), plus
        attention's 12 x layers x width x sequence per token."""
        tokens = self.sequence
        return 6.0 * parameters * tokens + 12.0 * self.layers * self.width * tokens * tokens


#: The sizes the check trains with.
DEFAULT_SIZE = Size()


class Block(nn.Module):
    """Pre-norm attention and MLP (plain ``nn.Linear`` layers, which the fp8 precision swaps for its own)."""

    def __init__(self, size: Size) -> None:
        super().__init__()
        self.heads = size.heads
        self.norm1 = nn.LayerNorm(size.width)
        self.qkv = nn.Linear(size.width, 3 * size.width)
        self.out = nn.Linear(size.width, size.width)
        self.norm2 = nn.LayerNorm(size.width)
        self.up = nn.Linear(size.width, 4 * size.width)
        self.down = nn.Linear(4 * size.width, size.width)

    def forward(self, x: Tensor) -> Tensor:
        batch, length, width = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(batch, length, 3, self.heads, width // self.heads).unbind(2)
        attended = F.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True
        )
        x = x + self.out(attended.transpose(1, 2).reshape(batch, length, width))
        return x + self.down(F.gelu(self.up(self.norm2(x))))


class CheckTransformer(LightningModule):
    """A next-token language model; records each training step's loss in :attr:`losses`.

    Args:
        size: the model's and the data's sizes.
        lr: Adam's learning rate (the fault injection passes 0).
        seed: the seed of the initial weights.
        loss_scale: scales the loss (the fault injection's forced wrong loss).
        recompile_after: from this training step on, add a Python number to the hidden state that a compiled model
            guards on: one recompile in that step (the fault injection of ``fit.recompiles``).
    """

    def __init__(
        self,
        size: Size = DEFAULT_SIZE,
        lr: float = 3e-3,
        seed: int = 0,
        loss_scale: float = 1.0,
        recompile_after: int | None = None,
    ) -> None:
        super().__init__()
        self.size, self.lr, self.loss_scale, self.recompile_after = size, lr, loss_scale, recompile_after
        torch.manual_seed(seed)
        self.embed = nn.Embedding(size.vocab, size.width)
        self.blocks = nn.ModuleList(Block(size) for _ in range(size.layers))
        self.norm = nn.LayerNorm(size.width)
        self.head = nn.Linear(size.width, size.vocab)
        self.losses: list[float] = []
        self.shift = 0  # a Python number: a compiled forward is specialised to its value

    @override
    def forward(self, tokens: Tensor) -> Tensor:
        x = self.embed(tokens)
        if self.shift:
            x = x + self.shift * 1e-9
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))

    @override
    def training_step(self, batch: Any, batch_idx: int) -> Tensor:
        (tokens,) = batch
        if self.recompile_after is not None and self.global_step >= self.recompile_after:
            self.shift = 1
        logits = self(tokens[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, self.size.vocab), tokens[:, 1:].reshape(-1))
        loss = loss * self.loss_scale
        self.losses.append(float(loss.detach()))
        return loss

    @override
    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=self.lr)

    def parameter_count(self) -> int:
        return sum(p.numel() for p in self.parameters())


def token_data(size: Size = DEFAULT_SIZE) -> DataLoader:
    """The fixed sequences (``size.sequence + 1`` tokens each, inputs and shifted targets), in a fixed order."""
    tokens = torch.randint(
        0, size.vocab, (size.sequences, size.sequence + 1), generator=torch.Generator().manual_seed(1)
    )
    return DataLoader(TensorDataset(tokens), batch_size=size.batch, shuffle=False, drop_last=True)


def flat_parameters(module: nn.Module) -> Tensor:
    """Every parameter of ``module``, flattened into one fp32 host tensor (for comparisons)."""
    return torch.cat([p.detach().float().flatten().cpu() for p in module.parameters()])
