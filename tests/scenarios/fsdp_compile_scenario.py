"""LitGPT's 2-HPU ``pretrain`` reduced to its parts: Fabric FSDP with ``auto_wrap_policy`` plus ``torch.compile``.

As LitGPT does, the model is built on the meta device (``fabric.init_module(empty_init=True)``), compiled with
``torch.compile`` before ``fabric.setup`` (which compiles the FSDP-wrapped module again, with ``hpu_backend`` on HPU),
and trained with each rank feeding its half of every global batch. On torch 2.9 FSDP's all-gather then runs eagerly
inside the compiled module and reaches the stand-in's ``"hccl"`` group, which crashed both ranks until TorchDynamo
was kept out of the group's methods (``gaudi_standin.distributed.compiler_opaque``). Each rank writes the weights
FSDP started from, its losses, and how far the trained weights are from plain PyTorch trained from the same start
over the global batches, to ``<out>/rank<rank>.json``.

Usage: ``main(OUT_DIR)`` from ``two_device_scenario.py`` (scenario ``fsdp_compile``).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import torch
from lightning.fabric import Fabric
from lightning.fabric.strategies import FSDPStrategy
from torch import nn
from torch.distributed.fsdp import FullyShardedDataParallel

from tests.helpers.dynamo import reset_dynamo
from tests.helpers.standin import counters as standin_counters

WORLD = 2
MICRO_BATCH = 2  # per rank
WIDTH = 16
STEPS = 2
LR = 0.1


class Block(nn.Module):
    """The unit ``auto_wrap_policy`` wraps, as LitGPT's ``Block``."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(WIDTH)
        self.fc = nn.Linear(WIDTH, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc(torch.nn.functional.gelu(self.norm(x)))


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.Sequential(Block(), Block())
        self.head = nn.Linear(WIDTH, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(x))


def _global_batches() -> torch.Tensor:
    x = torch.randn(STEPS, WORLD * MICRO_BATCH, WIDTH, generator=torch.Generator().manual_seed(3))
    return torch.cat([x, x.mean(dim=-1, keepdim=True).tanh()], dim=-1)


def _loss(net: nn.Module, batch: torch.Tensor) -> torch.Tensor:
    return nn.functional.mse_loss(net(batch[..., :WIDTH]), batch[..., WIDTH:])


def _full_state(fsdp_root: FullyShardedDataParallel, net: nn.Module) -> dict[str, torch.Tensor]:
    with FullyShardedDataParallel.summon_full_params(fsdp_root):
        return {key: value.detach().cpu().clone() for key, value in net.state_dict().items()}


def _flat(state: dict[str, torch.Tensor]) -> torch.Tensor:
    return torch.cat([state[key].reshape(-1).float() for key in sorted(state)])


def _reference(start: dict[str, torch.Tensor]) -> torch.Tensor:
    """Plain PyTorch in one process, from FSDP's starting weights, each step over the whole global batch."""
    net = Net()
    net.load_state_dict(start)
    optimizer = torch.optim.SGD(net.parameters(), lr=LR)
    for batch in _global_batches():
        optimizer.zero_grad()
        _loss(net, batch).backward()
        optimizer.step()
    return _flat(net.state_dict())


def run() -> dict[str, Any]:
    reset_dynamo()  # compile from scratch, counted from here
    compiled_before = standin_counters().compiled_graphs
    fabric = Fabric(accelerator="hpu", devices=WORLD, strategy=FSDPStrategy(auto_wrap_policy={Block}))
    fabric.launch()
    fabric.seed_everything(42)
    with fabric.init_module(empty_init=True):
        model = Net()
    module = fabric.setup(torch.compile(model))  # LitGPT's order: compile, then set up
    optimizer = fabric.setup_optimizers(torch.optim.SGD(module.parameters(), lr=LR))
    fsdp_root = module._forward_module._orig_mod  # the compiled FSDP root
    inner = module.module
    start = _full_state(fsdp_root, inner)
    losses = []
    for batch in _global_batches()[:, fabric.global_rank * MICRO_BATCH : (fabric.global_rank + 1) * MICRO_BATCH]:
        optimizer.zero_grad()
        loss = _loss(module, fabric.to_device(batch))
        fabric.backward(loss)
        optimizer.step()
        losses.append(float(loss.detach()))
    trained = _flat(_full_state(fsdp_root, inner))
    return {
        "strategy": type(fabric.strategy).__name__,
        "compiled_module": type(module._forward_module).__name__,
        "wrapped_blocks": sum(
            isinstance(child, FullyShardedDataParallel) and isinstance(child.module, Block)
            for child in fsdp_root.modules()
        ),
        "compiled_graphs": standin_counters().compiled_graphs - compiled_before,
        "losses": losses,
        "max_diff_to_reference": float((trained - _reference(copy.deepcopy(start))).abs().max()),
        "trained": trained.tolist(),
    }


def main(out: Path) -> None:
    report = run()
    (out / f"rank{torch.distributed.get_rank()}.json").write_text(json.dumps(report))
