"""A Lightning Fabric training loop on HPUs, with any strategy name: fast DDP, DDP or DeepSpeed.

On a Gaudi node (Fabric starts one process per HPU)::

    python examples/fabric_hpu.py --devices 8 --strategy hpu_fast_ddp --accumulate 4 --clip 1.0
    python examples/fabric_hpu.py --devices 8 --strategy deepspeed_stage_2 --clip 1.0

Without a Gaudi, the CPU stand-in emulates the HPUs (two here)::

    LIGHTNING_HPU_BACKEND=cpu LIGHTNING_HPU_CPU_DEVICES=2 python examples/fabric_hpu.py --devices 2 --steps 4

Gradient accumulation (``--accumulate``, DDP strategies only) uses ``fabric.no_backward_sync``; with fast DDP the one
gradient all-reduce of each step runs at ``fabric.clip_gradients`` (or at ``optimizer.step()`` without ``--clip``).
With a DeepSpeed name, DeepSpeed clips by itself: ``--clip`` goes to its config's ``gradient_clipping``.
"""

from __future__ import annotations

import argparse

import torch
from lightning.fabric import Fabric
from torch import nn

import lightning_hpu  # noqa: F401  (registers accelerator="hpu" and the HPU strategies)
from lightning_hpu import run_script


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--devices", type=int, default=1)
    parser.add_argument("--strategy", default="hpu_fast_ddp", help="any Lightning or HPU strategy name")
    parser.add_argument("--steps", type=int, default=8, help="optimizer steps")
    parser.add_argument("--accumulate", type=int, default=1, help="micro-batches per optimizer step (DDP only)")
    parser.add_argument("--clip", type=float, default=None, help="clip gradients to this norm")
    args = parser.parse_args(argv)
    if "deepspeed" in args.strategy and args.accumulate != 1:
        parser.error("--accumulate is for DDP strategies; DeepSpeed takes `gradient_accumulation_steps` in its config")
    return args


def main(argv: list[str] | None = None) -> float:
    args = parse_args(argv)
    deepspeed = "deepspeed" in args.strategy
    fabric = Fabric(accelerator="hpu", devices=args.devices, strategy=args.strategy)
    if deepspeed:
        fabric.strategy.config["gradient_clipping"] = args.clip or 0.0  # type: ignore[attr-defined]
    fabric.launch()
    fabric.seed_everything(0)  # the same initial weights on every rank (DeepSpeed needs it)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    model, optimizer = fabric.setup(model, optimizer)
    generator = torch.Generator().manual_seed(fabric.global_rank)  # each rank its own data
    losses = []
    for _ in range(args.steps):
        for micro in range(args.accumulate):
            x = torch.randn(16, 32, generator=generator).to(fabric.device)
            y = x[:, :1] * 2 + 1
            accumulating = micro < args.accumulate - 1
            with fabric.no_backward_sync(model, enabled=accumulating and not deepspeed):
                loss = nn.functional.mse_loss(model(x).float(), y)
                fabric.backward(loss / args.accumulate)
        if args.clip is not None and not deepspeed:
            fabric.clip_gradients(model, optimizer, max_norm=args.clip)
        optimizer.step()
        optimizer.zero_grad()
        losses.append(float(fabric.all_reduce(loss.detach(), reduce_op="mean")))
    name = type(fabric.strategy).__name__
    fabric.print(f"{name} on {fabric.world_size} HPUs: loss {losses[0]:.3f} -> {losses[-1]:.3f}")
    if torch.distributed.is_initialized():
        # Leave together: a process that exits while its peer still holds the connection can abort at exit.
        fabric.barrier()
        torch.distributed.destroy_process_group()
    return losses[-1]


if __name__ == "__main__":
    run_script(main)
