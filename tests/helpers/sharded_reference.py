"""The sharded scenarios' model, data and single-process reference (``tests/scenarios/sharded_scenario.py`` and
``stream_scenario.py``): a transformer-like MLP of two blocks, the global batches of two ranks, and plain PyTorch over
them. Plain torch: no Lightning, so it loads the same under either Lightning namespace."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

WORLD = 2
MICRO_BATCH = 4  # per rank
FEATURES = 6
HIDDEN = 8
LR = 0.05
CLIP = 0.05  # small enough to be active on every step


class Block(nn.Module):
    """A transformer-like MLP block with a residual: the unit FSDP wraps and TP splits."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(FEATURES, HIDDEN)
        self.fc2 = nn.Linear(HIDDEN, FEATURES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(torch.tanh(self.fc1(x)))


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(100)
        self.blocks = nn.Sequential(Block(), Block())
        self.head = nn.Linear(FEATURES, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(x))


def make_data(steps: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(7)
    x = torch.randn(steps * WORLD * MICRO_BATCH, FEATURES, generator=generator)
    y = (x.sum(dim=1, keepdim=True) * 0.3).tanh()
    return torch.cat([x, y], dim=1)


def loss_of(net: nn.Module, batch: torch.Tensor) -> torch.Tensor:
    return nn.functional.mse_loss(net(batch[:, :FEATURES]), batch[:, FEATURES:])


def make_optimizer(params: Any, adam: bool) -> torch.optim.Optimizer:
    return torch.optim.Adam(params, lr=LR) if adam else torch.optim.SGD(params, lr=LR, momentum=0.9)


def reference(steps: int, clip: float | None, adam: bool = False, per_epoch: int | None = None) -> torch.Tensor:
    """One process, plain PyTorch, each step over the whole global batch (epochs of ``per_epoch`` steps)."""
    net = Net()
    optimizer = make_optimizer(net.parameters(), adam)
    per_epoch = per_epoch or steps
    data = make_data(per_epoch).reshape(per_epoch, WORLD * MICRO_BATCH, FEATURES + 1)
    for step in range(steps):
        batch = data[step % per_epoch]
        optimizer.zero_grad()
        loss_of(net, batch).backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(net.parameters(), clip)
        optimizer.step()
    return flat(net.state_dict())


def flat(state: dict[str, torch.Tensor]) -> torch.Tensor:
    full = {key: value.full_tensor() if hasattr(value, "full_tensor") else value for key, value in state.items()}
    return torch.cat([full[key].detach().reshape(-1).float().cpu() for key in sorted(full)])


def full_weights(root: nn.Module, net: nn.Module) -> torch.Tensor:
    """The unsharded weights of ``net`` (FSDP1 inside ``root``, or DTensor parameters), the same on every rank."""
    from torch.distributed.fsdp import FullyShardedDataParallel

    if isinstance(root, FullyShardedDataParallel):
        with FullyShardedDataParallel.summon_full_params(root):
            return flat(net.state_dict())
    return flat(net.state_dict())
