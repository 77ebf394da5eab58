"""Multi-process scenarios for ``HPUParallelStrategy``, run by
``tests/lightning_hpu/pytorch/strategies/test_parallel_multiprocess.py``.

Every process runs this script (Lightning's launcher re-runs it for each local rank; for simulated nodes the test
starts one process per node). It trains the same tiny model several ways on two ranks, each rank feeding its own
half of every global batch, and checks against a plain single-process PyTorch run over the global batches. Each
rank writes what it observed to ``<out>/rank<global rank>.json``; the test reads and asserts.

Usage: ``python parallel_scenario.py OUT_DIR DEVICES NUM_NODES``, where ``DEVICES`` is a count or a list of HPU
indices such as ``2,3``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from lightning.fabric import Fabric
from lightning.fabric.utilities.distributed import _sync_ddp
from lightning.pytorch import Callback, LightningModule, Trainer
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.utils.data import DataLoader, TensorDataset

from lightning_hpu import HPUAccelerator, HPUParallelStrategy, HPUPrecisionPlugin
from lightning_hpu.runtime import require_backend
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
from tests.helpers.trainer import quiet_trainer

count_gradient_reduces()

FP8 = {"fp8_format": "HYBRID", "amax_history_len": 2, "amax_compute_algo": "max"}

# Python-level collectives seen by this process: (calling module, collective, op, dtype).
SEEN: set[tuple[str, str, str, str]] = set()
SPYING = [True]


def _spy(name: str) -> None:
    original = getattr(dist, name)

    def wrapper(first: Any, *args: Any, **kwargs: Any) -> Any:
        if SPYING[0]:
            tensor = args[0] if name == "all_gather" else first  # all_gather(outputs, tensor)
            op = kwargs.get("op", args[0] if name == "all_reduce" and args else "default")
            caller = sys._getframe(1).f_globals.get("__name__", "?")
            SEEN.add((caller, name, str(op), str(tensor.dtype)))
        return original(first, *args, **kwargs)

    setattr(dist, name, wrapper)


for _name in ("all_reduce", "broadcast", "all_gather"):
    _spy(_name)


# Fast DDP's gradient all-reduces, counted per fit.
def start_rank() -> int:
    """This process's global rank, known before the process group exists (0 in the launching process)."""
    return int(os.environ.get("NODE_RANK", "0")) + int(os.environ.get("LOCAL_RANK", "0"))


class Model(LightningModule):
    def __init__(self, accumulate: int) -> None:
        super().__init__()
        # Each rank starts from different weights: the strategy must give everyone rank 0's.
        self.net = make_net(seed=100 + start_rank())
        self.accumulate = accumulate
        self.devices: set[str] = set()

    def on_train_batch_start(self, batch: Any, batch_idx: int) -> None:
        self.devices |= {str(batch[0].device)} | {str(p.device) for p in self.parameters()}

    def training_step(self, batch: torch.Tensor, batch_idx: int) -> torch.Tensor:
        loss = nn.functional.mse_loss(self.net(batch[:, :FEATURES]), batch[:, FEATURES:])
        # 1 on rank 0, 11 on rank 1: the global mean is 6.
        self.log("rank_value", torch.tensor(10.0 * self.global_rank + 1.0), sync_dist=True, on_epoch=True)
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=LR, momentum=0.9)

    def train_dataloader(self) -> DataLoader:
        # Rank r feeds rows [r*B, (r+1)*B) of every global micro-batch of 2*B rows.
        data = make_data(self.accumulate).reshape(-1, WORLD, MICRO_BATCH, FEATURES + 1)[:, self.global_rank]
        return DataLoader(
            TensorDataset(data.reshape(-1, FEATURES + 1)),
            batch_size=MICRO_BATCH,
            collate_fn=lambda rows: torch.stack([row[0] for row in rows]),
        )


class Observe(Callback):
    """Records what the DDP wrapper was built with."""

    def __init__(self) -> None:
        self.seen: dict[str, Any] = {}

    def on_train_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        model = trainer.strategy.model
        self.seen["wrapped"] = isinstance(model, nn.parallel.DistributedDataParallel)
        if self.seen["wrapped"]:
            self.seen["bucket_bytes_cap"] = model.bucket_bytes_cap
            self.seen["gradient_as_bucket_view"] = model.gradient_as_bucket_view


HOOK_CALLS = [0]


def counting_hook(state, bucket):  # type: ignore[no-untyped-def]  # torch checks real (not string) annotations
    HOOK_CALLS[0] += 1
    return default_hooks.allreduce_hook(state, bucket)


def fit(
    devices: int | list[int],
    num_nodes: int,
    accumulate: int,
    clip: float | None,
    plugins: list[Any] | None = None,
    **strategy_kwargs: Any,
) -> dict[str, Any]:
    GRADIENT_REDUCES[0] = 0
    model = Model(accumulate)
    observe = Observe()
    trainer = quiet_trainer(
        accelerator=HPUAccelerator(),
        devices=devices,
        num_nodes=num_nodes,
        strategy=HPUParallelStrategy(**strategy_kwargs),
        max_steps=STEPS,
        accumulate_grad_batches=accumulate,
        gradient_clip_val=clip,
        use_distributed_sampler=False,
        callbacks=[observe],
        plugins=plugins,
        enable_checkpointing=False,
    )
    trainer.fit(model)
    weights = flat_weights(model)
    gathered = trainer.strategy.all_gather(weights)
    return {
        "weights": weights.tolist(),
        "max_diff_between_ranks": float((gathered - gathered[0]).abs().max()),
        "max_diff_to_reference": float((weights - reference(accumulate, clip)).abs().max()),
        "rank_value_epoch": float(trainer.callback_metrics["rank_value_epoch"]),
        "process_group_backend": trainer.strategy.process_group_backend,
        "process_group": type(dist.group.WORLD).__name__,
        "gradient_reduces": GRADIENT_REDUCES[0],
        "bound_module": require_backend().current_device(),
        "devices": sorted(model.devices),
        "strategy": trainer.strategy,
        "model": model,
        **observe.seen,
    }


def fp8_checks(devices: int | list[int], num_nodes: int) -> dict[str, Any]:
    """fp8 training (the stand-in's emulated engine) under DDP: the delayed scales agree across ranks."""
    results = fit(devices, num_nodes, accumulate=1, clip=None, plugins=[HPUPrecisionPlugin("fp8", fp8_recipe=FP8)])
    first = results["model"].net[0]
    # Each rank saw its own half of the batch (different amaxes); reduce_amax gives both the same scales.
    scales = torch.cat([first._fp8_scaling[True].scale, first._fp8_scaling[False].scale])
    gathered = results["strategy"].all_gather(scales)
    results["scales"] = scales.tolist()
    results["scale_diff_between_ranks"] = float((gathered - gathered[0]).abs().max())
    return results


def collectives_checks(strategy: HPUParallelStrategy) -> dict[str, Any]:
    rank = dist.get_rank()
    results: dict[str, Any] = {}
    results["broadcast"] = strategy.broadcast({"from": rank, "payload": list(range(rank * 3))}, src=1)
    ints = torch.tensor([3, 5]) * (rank + 1)
    summed = strategy.reduce(ints, reduce_op="sum")
    results["int_sum"] = [summed.tolist(), str(summed.dtype)]
    results["int_mean"] = strategy.reduce(torch.tensor([4, 7]) * (rank + 1)).tolist()
    results["float_mean"] = strategy.reduce(torch.tensor([1.0, 2.0]) * (rank + 1), reduce_op="mean").tolist()
    gathered = strategy.all_gather(torch.tensor([rank], dtype=torch.int64))
    results["int_gather"] = [gathered.tolist(), str(gathered.dtype)]
    results["reduce_decision"] = strategy.reduce_boolean_decision(rank == 0, all=False)
    # Integers are reduced in fp32 by HCCL: 2**24 + 1 on each rank sums to 2**25, not 2**25 + 2.
    results["int32_beyond_fp32"] = strategy.reduce(torch.tensor([2**24 + 1], dtype=torch.int32), reduce_op="sum").item()
    # An int64 beyond int32: exact where the device holds int64 (eager, Gaudi2), refused where it holds int32.
    try:
        results["int64_beyond_int32"] = strategy.all_gather(torch.tensor([2**40 + 1])).tolist()
    except ValueError as error:
        results["int64_beyond_int32"] = str(error)
    # What Lightning's own DDP reduce would send: the HCCL stand-in must refuse it.
    SPYING[0] = False
    try:
        _sync_ddp(torch.ones(1), reduce_op="mean")
        results["lightning_mean"] = "accepted"
    except RuntimeError as error:
        results["lightning_mean"] = str(error)
    SPYING[0] = True
    return results


def fabric_checks(devices: int | list[int], num_nodes: int) -> dict[str, Any]:
    fabric = Fabric(accelerator="hpu", devices=devices, num_nodes=num_nodes, strategy="hpu_ddp")
    fabric.launch()
    net = make_net(seed=100 + start_rank())
    optimizer = torch.optim.SGD(net.parameters(), lr=LR)
    net, optimizer = fabric.setup(net, optimizer)
    batch = fabric.to_device(make_data(1)[fabric.global_rank * MICRO_BATCH : (fabric.global_rank + 1) * MICRO_BATCH])
    fabric.backward(nn.functional.mse_loss(net(batch[:, :FEATURES]), batch[:, FEATURES:]))
    optimizer.step()
    gathered = fabric.all_gather(flat_weights(net))
    return {
        "strategy_class": type(fabric.strategy).__name__,
        "max_diff_between_ranks": float((gathered - gathered[0]).abs().max()),
        "mean": float(fabric.all_reduce(torch.tensor(10.0 * fabric.global_rank + 1.0), reduce_op="mean")),
        "broadcast": fabric.broadcast(f"from {fabric.global_rank}", src=1),
        "bound_module": require_backend().current_device(),
    }


def main() -> None:
    out, num_nodes = Path(sys.argv[1]), int(sys.argv[3])
    devices: int | list[int] = [int(i) for i in sys.argv[2].split(",")] if "," in sys.argv[2] else int(sys.argv[2])
    results: dict[str, Any] = {}
    results["ddp"] = fit(
        devices,
        num_nodes,
        accumulate=1,
        clip=CLIP,
        bucket_cap_mb=1,
        gradient_as_bucket_view=True,
        ddp_comm_hook=counting_hook,
    )
    results["ddp"]["hook_calls"] = HOOK_CALLS[0]
    results["ddp_accumulate"] = fit(devices, num_nodes, accumulate=2, clip=None)
    results["fast"] = fit(devices, num_nodes, accumulate=1, clip=CLIP, fast_ddp=True)
    results["fast_accumulate"] = fit(devices, num_nodes, accumulate=3, clip=CLIP, fast_ddp=True)
    results["fast_bf16_wire"] = fit(
        devices, num_nodes, accumulate=1, clip=None, fast_ddp=True, reduce_dtype=torch.bfloat16
    )
    results["collectives"] = collectives_checks(results["fast_accumulate"]["strategy"])
    results["fabric"] = fabric_checks(devices, num_nodes)
    results["fp8"] = fp8_checks(devices, num_nodes)
    results["python_collectives"] = sorted(SEEN)
    results["native_int64"] = require_backend().native_int64()
    for scenario in results.values():
        if isinstance(scenario, dict):
            scenario.pop("strategy", None)
            scenario.pop("model", None)
    (out / f"rank{dist.get_rank()}.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
