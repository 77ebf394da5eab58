"""What the two-rank data-parallel scenarios (``fabric_scenario.py``, ``parallel_scenario.py``) train and compare
against: the data, the net, a plain single-process PyTorch reference over the global batches, and fast DDP's
gradient all-reduces counted."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from lightning_hpu.distributed import fast_ddp

WORLD = 2
MICRO_BATCH = 4  # per rank
STEPS = 3  # optimizer steps
FEATURES = 5
LR = 0.2
CLIP = 0.05  # small enough that clipping is active on every step

#: Fast DDP's gradient all-reduces in this process once :func:`count_gradient_reduces` ran (a scenario sets it to 0).
GRADIENT_REDUCES = [0]


def count_gradient_reduces() -> None:
    """Makes fast DDP count its gradient all-reduces in ``GRADIENT_REDUCES`` (once per process; a scenario calls it
    at import, before any strategy is built)."""
    original = fast_ddp.all_reduce_gradients_
    if getattr(original, "counts_into", None) is GRADIENT_REDUCES:
        return

    def counting(*args: Any, **kwargs: Any) -> int:
        GRADIENT_REDUCES[0] += 1
        return original(*args, **kwargs)

    counting.counts_into = GRADIENT_REDUCES  # type: ignore[attr-defined]
    fast_ddp.all_reduce_gradients_ = counting  # type: ignore[assignment]


def make_data(accumulate: int) -> torch.Tensor:
    """The global batches of ``STEPS`` optimizer steps of ``accumulate`` micro-steps: features, then the target."""
    generator = torch.Generator().manual_seed(7)
    x = torch.randn(STEPS * accumulate * WORLD * MICRO_BATCH, FEATURES, generator=generator)
    y = (x.sum(dim=1, keepdim=True) * 0.5 + 0.3).tanh()
    return torch.cat([x, y], dim=1)


def make_net(seed: int) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(FEATURES, 6), nn.Tanh(), nn.Linear(6, 1))


def flat_weights(module: nn.Module) -> torch.Tensor:
    """Every parameter of ``module`` in one float32 host tensor."""
    return torch.cat([p.detach().float().reshape(-1).cpu() for p in module.parameters()])


def reference(accumulate: int, clip: float | None, steps: int = STEPS) -> torch.Tensor:
    """One process, plain PyTorch: each step averages the loss over the whole global batch of its micro-steps."""
    data = make_data(accumulate)
    net = make_net(seed=100)
    optimizer = torch.optim.SGD(net.parameters(), lr=LR, momentum=0.9)
    per_step = accumulate * WORLD * MICRO_BATCH
    for step in range(steps):
        chunk = data[step * per_step : (step + 1) * per_step]
        optimizer.zero_grad()
        nn.functional.mse_loss(net(chunk[:, :FEATURES]), chunk[:, FEATURES:]).backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(net.parameters(), clip)
        optimizer.step()
    return flat_weights(net)
