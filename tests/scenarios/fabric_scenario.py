"""Two-process Fabric scenarios on the CPU stand-in, run by
``tests/lightning_hpu/fabric/strategies/test_multiprocess.py``.

Fabric's launcher re-runs this script for rank 1. Both ranks train the same tiny model, each on its own half of
every global batch, with ``strategy="hpu_fast_ddp"`` (with gradient accumulation in ``fabric.no_backward_sync`` and
clipping, and without) and then with ``strategy="deepspeed"`` (ZeRO-2, with ``fabric.save``/``fabric.load``); the
weights are compared across ranks and with a plain single-process PyTorch run over the global batches. Each rank
writes what it saw to ``<out>/rank<global rank>.json``.

Usage: ``python fabric_scenario.py OUT_DIR``, or ``main(OUT_DIR)`` from ``two_device_scenario.py``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import torch
from lightning.fabric import Fabric
from torch import nn

from tests.helpers.data_parallel import (
    CLIP,
    FEATURES,
    GRADIENT_REDUCES,
    LR,
    MICRO_BATCH,
    STEPS,
    WORLD,
    count_gradient_reduces,
    flat_weights,
    make_data,
    make_net,
    reference,
)

count_gradient_reduces()

DEEPSPEED_CLIP = 1.0  # DeepSpeed's default ``gradient_clipping`` (active on some steps here)


def micro_batch(data: torch.Tensor, step: int, micro: int, accumulate: int, rank: int) -> torch.Tensor:
    """Rank ``rank``'s share of micro-step ``micro`` of optimizer step ``step`` (the reference's global order)."""
    start = step * accumulate * WORLD * MICRO_BATCH + micro * WORLD * MICRO_BATCH + rank * MICRO_BATCH
    return data[start : start + MICRO_BATCH]


def fast_ddp(fabric: Fabric, accumulate: int, clip: float | None) -> dict[str, Any]:
    GRADIENT_REDUCES[0] = 0
    net = make_net(seed=100 + fabric.global_rank)  # different weights per rank: setup must copy rank 0's
    optimizer = torch.optim.SGD(net.parameters(), lr=LR, momentum=0.9)
    net, optimizer = fabric.setup(net, optimizer)
    data = make_data(accumulate)
    reduces_inside_no_sync = 0
    for step in range(STEPS):
        optimizer.zero_grad()
        for micro in range(accumulate):
            batch = fabric.to_device(micro_batch(data, step, micro, accumulate, fabric.global_rank))
            accumulating = micro < accumulate - 1
            before = GRADIENT_REDUCES[0]
            with fabric.no_backward_sync(net, enabled=accumulating):
                loss = nn.functional.mse_loss(net(batch[:, :FEATURES]), batch[:, FEATURES:]) / accumulate
                fabric.backward(loss)
            if accumulating:
                reduces_inside_no_sync += GRADIENT_REDUCES[0] - before
        if clip is not None:
            fabric.clip_gradients(net, optimizer, max_norm=clip)
        optimizer.step()
    weights = flat_weights(net)
    gathered = fabric.all_gather(weights)
    return {
        "wrapped": type(net.module).__name__,
        "max_diff_between_ranks": float((gathered - gathered[0]).abs().max()),
        "max_diff_to_reference": float((weights - reference(accumulate, clip)).abs().max()),
        "gradient_reduces": GRADIENT_REDUCES[0],
        "reduces_inside_no_sync": reduces_inside_no_sync,
    }


def deepspeed_run(fabric: Fabric, out: Path) -> dict[str, Any]:
    net = make_net(seed=100)  # DeepSpeed expects the same initial weights on every rank (it does not broadcast them)
    optimizer = torch.optim.SGD(net.parameters(), lr=LR, momentum=0.9)
    model, optimizer = fabric.setup(net, optimizer)
    data = make_data(1)

    def step(index: int) -> None:
        batch = fabric.to_device(micro_batch(data, index, 0, 1, fabric.global_rank))
        loss = nn.functional.mse_loss(model(batch[:, :FEATURES]), batch[:, FEATURES:])
        fabric.backward(loss)
        optimizer.step()
        optimizer.zero_grad()

    for index in range(STEPS - 1):
        step(index)
    checkpoint = out / "deepspeed_checkpoint"
    fabric.save(checkpoint, {"model": model, "optimizer": optimizer, "step": STEPS - 1})
    step(STEPS - 1)
    final = flat_weights(model)
    state: dict[str, Any] = {"model": model, "optimizer": optimizer, "step": 0}
    fabric.load(checkpoint, state)
    restored = flat_weights(model)
    step(STEPS - 1)  # the last step again, from the restored weights and momentum
    gathered = fabric.all_gather(final)
    return {
        "engine": type(model._forward_module).__name__,
        "max_diff_between_ranks": float((gathered - gathered[0]).abs().max()),
        "max_diff_to_reference": float((final - reference(1, DEEPSPEED_CLIP)).abs().max()),
        "restored_diff_to_saved": float((restored - reference(1, DEEPSPEED_CLIP, steps=STEPS - 1)).abs().max()),
        "restored_step": state["step"],
        "repeat_diff": float((flat_weights(model) - final).abs().max()),
        "checkpoint_is_deepspeed_dir": (checkpoint / "checkpoint").is_dir(),
    }


def main(out: Path) -> None:
    results: dict[str, Any] = {}
    fabric = Fabric(accelerator="hpu", devices=WORLD, strategy="hpu_fast_ddp")
    fabric.launch()
    results["fast_strategy"] = [type(fabric.strategy).__name__, fabric.strategy.fast_ddp]  # type: ignore[attr-defined]
    results["fast_accumulate_clip"] = fast_ddp(fabric, accumulate=2, clip=CLIP)
    results["fast_plain"] = fast_ddp(fabric, accumulate=1, clip=None)
    deepspeed_fabric = Fabric(accelerator="hpu", devices=WORLD, strategy="deepspeed")
    deepspeed_fabric.launch()
    results["deepspeed_strategy"] = [
        type(deepspeed_fabric.strategy).__module__,
        type(deepspeed_fabric.strategy).__name__,
    ]
    results["deepspeed"] = deepspeed_run(deepspeed_fabric, out)
    results["process_group_backend"] = torch.distributed.get_backend()
    (out / f"rank{fabric.global_rank}.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
