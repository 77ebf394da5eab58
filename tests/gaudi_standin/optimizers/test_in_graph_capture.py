"""The stand-in's fused optimizers run inside an HPU graph capture, and replaying the captured step trains as eager."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from gaudi_standin.optimizers import FusedAdamW, FusedClipNorm, FusedSGD
from lightning_hpu.hpu_graphs import HPUGraph, graph
from tests.helpers.standin import counters as standin_counters


def _net() -> nn.Module:
    torch.manual_seed(3)
    return nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 3)).to("hpu")


def _batches(n: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    gen = torch.Generator().manual_seed(5)
    batches = [(torch.randn(5, 6, generator=gen), torch.randint(0, 3, (5,), generator=gen)) for _ in range(n)]
    return [(x.to("hpu"), y.to("hpu")) for x, y in batches]


def _step(model: nn.Module, optimizer: Any, clip: FusedClipNorm | None, x: torch.Tensor, y: torch.Tensor) -> Any:
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    if clip is not None:
        clip.clip_norm(list(model.parameters()))
    optimizer.step()
    return loss


OPTIMIZERS: dict[str, Callable[[Any], Any]] = {
    "adamw-no-bias-correction": lambda p: FusedAdamW(p, lr=0.02, weight_decay=0.1, bias_correction=False),
    "adamw-bf16-moments": lambda p: FusedAdamW(p, lr=0.02, bias_correction=False, moments_dtype=torch.bfloat16),
    "sgd-momentum": lambda p: FusedSGD(p, lr=0.1, momentum=0.9, weight_decay=0.01),
    "sgd-nesterov": lambda p: FusedSGD(p, lr=0.1, momentum=0.5, nesterov=True),
}


@pytest.mark.parametrize("clip", [False, True], ids=["no-clip", "fused-clip"])
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_a_captured_fused_step_replays_like_eager_steps(lazy_standin: Any, name: str, clip: bool) -> None:
    """Warm up eagerly (the state exists), capture forward+backward+clip+step once, replay: equal to eager."""
    eager, graphed = _net(), _net()
    make = OPTIMIZERS[name]
    eager_opt, graphed_opt = make(eager.parameters()), make(graphed.parameters())
    eager_clip = FusedClipNorm(eager.parameters(), 0.5) if clip else None
    graphed_clip = FusedClipNorm(graphed.parameters(), 0.5) if clip else None
    batches = _batches(5)

    eager_losses = []
    for x, y in batches:
        eager_opt.zero_grad(set_to_none=False)
        eager_losses.append(_step(eager, eager_opt, eager_clip, x, y).item())

    x0, y0 = batches[0]
    graphed_opt.zero_grad(set_to_none=False)
    first = _step(graphed, graphed_opt, graphed_clip, x0, y0).item()
    static_x, static_y = batches[1][0].clone(), batches[1][1].clone()
    g = HPUGraph()
    graphed_opt.zero_grad(set_to_none=False)
    with graph(g):
        static_loss = _step(graphed, graphed_opt, graphed_clip, static_x, static_y)
    graphed_losses = [first, static_loss.item()]
    for x, y in batches[2:]:
        graphed_opt.zero_grad(set_to_none=False)  # grads exist: zeroing in place keeps the captured storage
        static_x.copy_(x)
        static_y.copy_(y)
        g.replay()
        graphed_losses.append(static_loss.item())

    assert standin_counters().graph_replays == 3
    torch.testing.assert_close(graphed_losses, eager_losses)
    for a, b in zip(eager.parameters(), graphed.parameters(), strict=True):
        torch.testing.assert_close(a, b)


def test_adamw_bias_correction_is_frozen_at_the_captured_step_as_on_a_gaudi(lazy_standin: Any) -> None:
    """The bridge hands the bias-corrected step size to its kernel as a host value: a replay reuses the captured one."""
    eager, graphed = _net(), _net()
    eager_opt, graphed_opt = FusedAdamW(eager.parameters(), lr=0.02), FusedAdamW(graphed.parameters(), lr=0.02)
    batches = _batches(4)
    x0, y0 = batches[0]
    for model, opt in ((eager, eager_opt), (graphed, graphed_opt)):
        opt.zero_grad(set_to_none=False)
        _step(model, opt, None, x0, y0)

    static_x, static_y = batches[1][0].clone(), batches[1][1].clone()
    g = HPUGraph()
    graphed_opt.zero_grad(set_to_none=False)
    with graph(g):
        _step(graphed, graphed_opt, None, static_x, static_y)
    for x, y in batches[2:]:
        graphed_opt.zero_grad(set_to_none=False)
        static_x.copy_(x)
        static_y.copy_(y)
        g.replay()

    for x, y in batches[1:]:
        eager_opt.param_groups[0]["step"] = 1  # every eager step uses the step size of the captured (second) step
        eager_opt.zero_grad(set_to_none=False)
        _step(eager, eager_opt, None, x, y)
    assert graphed_opt.param_groups[0]["step"] == 2  # Python ran the step once, at the capture
    for a, b in zip(eager.parameters(), graphed.parameters(), strict=True):
        torch.testing.assert_close(a, b)


def test_the_seeds_capture_with_a_fresh_fused_adamw_trains(lazy_standin: Any) -> None:
    """The seeds' shape: zero_grad(set_to_none=True), capture the first step of a fresh FusedAdamW; replays train."""
    model = _net()
    optimizer = FusedAdamW(model.parameters(), lr=0.05)
    batches = _batches(1) * 8
    static_x, static_y = batches[0][0].clone(), batches[0][1].clone()
    g = HPUGraph()
    optimizer.zero_grad(set_to_none=True)
    before = copy.deepcopy(model.state_dict())
    with graph(g):
        static_loss = _step(model, optimizer, None, static_x, static_y)
    losses = [static_loss.item()]
    for _ in batches[1:]:
        g.replay()
        losses.append(static_loss.item())
    assert losses[-1] < losses[0]
    assert all(not torch.equal(before[k], v) for k, v in model.state_dict().items())
