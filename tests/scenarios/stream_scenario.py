"""Two-rank scenarios for HPU streams and events under FSDP2, run by
``tests/lightning_hpu/distributed/test_fsdp2_streams_multiprocess.py``.

FSDP2 overlaps its all-gathers and reduce-scatters with compute on separate HPU streams, joined by events, and
waits for a prefetched all-gather that no module consumed through ``torch.accelerator.current_stream().wait_event``
(at the end of the backward). A fine-tuning model whose first block is frozen takes that path on every step: the
block's all-gather is prefetched in backward, but no gradient reaches it. Each scenario trains on 2 stand-in HPUs
(the ``sharded_scenario`` model and data, each rank feeding its half of the global batch) and compares with one
process of plain PyTorch over the global batches:

* ``trainer_fsdp2_frozen``: ``HPUModelParallelStrategy(data_parallel_size=2, tensor_parallel_size=1)`` with
  ``fully_shard`` in ``configure_model``;
* ``fabric_fsdp2_frozen``: Fabric's ``HPUModelParallelStrategy`` with the same sharding in its ``parallelize_fn``;
* ``trainer_2d``: data x tensor parallel, ``parallelize_module`` over the tensor-parallel axis (2) and
  ``fully_shard`` over the data-parallel axis (1), as a 2-D model is set up.

Each reports how often FSDP2 waited on an unconsumed all-gather's event, and of which type that event was.
Usage: ``main(OUT_DIR)`` from ``two_device_scenario.py``.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from lightning.fabric import Fabric

# As the launch imports it (a module of this directory, by its bare name): one copy of its patches, not two.
from sharded_scenario import Model, trainer
from torch import nn
from torch.distributed.fsdp._fully_shard import _fsdp_param_group

from lightning_hpu import HPUModelParallelStrategy
from lightning_hpu.fabric.strategies import HPUModelParallelStrategy as FabricHPUModelParallelStrategy
from tests.helpers.sharded_reference import (
    CLIP,
    FEATURES,
    LR,
    MICRO_BATCH,
    WORLD,
    Net,
    flat,
    loss_of,
    make_data,
    make_optimizer,
    reference,
)

STEPS = 3
#: The events FSDP2 waited on for an all-gather no module consumed, by type (and whether it is a torch.Event).
UNCONSUMED_WAITS: Counter[str] = Counter()
_finalize_backward = _fsdp_param_group.FSDPParamGroup.finalize_backward


def _counting_finalize_backward(group: Any) -> None:
    result = group._all_gather_result
    if result is not None and result.all_gather_event is not None:
        event = result.all_gather_event
        UNCONSUMED_WAITS[f"{type(event).__qualname__} (torch.Event: {isinstance(event, torch.Event)})"] += 1
    _finalize_backward(group)


_fsdp_param_group.FSDPParamGroup.finalize_backward = _counting_finalize_backward


def freeze_first_block(net: nn.Module) -> None:
    for parameter in net.blocks[0].parameters():
        parameter.requires_grad_(False)


def shard_per_block(net: nn.Module, mesh: Any) -> None:
    from torch.distributed.fsdp import fully_shard

    for block in net.blocks:
        fully_shard(block, mesh=mesh)
    fully_shard(net, mesh=mesh)


def frozen_reference() -> torch.Tensor:
    """One process, plain PyTorch, the first block frozen, each step over the whole global batch."""
    net = Net()
    freeze_first_block(net)
    optimizer = torch.optim.SGD(net.parameters(), lr=LR, momentum=0.9)
    for batch in make_data(STEPS).reshape(STEPS, WORLD * MICRO_BATCH, FEATURES + 1):
        optimizer.zero_grad()
        loss_of(net, batch).backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), CLIP)
        optimizer.step()
    return flat(net.state_dict())


def _report(strategy: Any, net: nn.Module, expected: torch.Tensor, waits_before: int) -> dict[str, Any]:
    return {
        "strategy": type(strategy).__name__,
        "mesh": dict(zip(strategy.device_mesh.mesh_dim_names or (), strategy.device_mesh.shape, strict=True)),
        "max_diff_to_reference": float((flat(net.state_dict()) - expected).abs().max()),
        "unconsumed_all_gather_waits": sum(UNCONSUMED_WAITS.values()) - waits_before,
        "event_types": sorted(UNCONSUMED_WAITS),
        "current_stream_after": torch.hpu.current_stream().id(),
    }


class FrozenFirstBlock(Model):
    def configure_model(self) -> None:
        freeze_first_block(self.net)
        shard_per_block(self.net, self.device_mesh["data_parallel"])


class DataTimesTensorParallel(Model):
    def configure_model(self) -> None:
        from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

        for block in self.net.blocks:
            parallelize_module(
                block, self.device_mesh["tensor_parallel"], {"fc1": ColwiseParallel(), "fc2": RowwiseParallel()}
            )
        shard_per_block(self.net, self.device_mesh["data_parallel"])


def trainer_scenario(out: Path, model: Model, data_parallel: int, expected: torch.Tensor) -> dict[str, Any]:
    waits_before = sum(UNCONSUMED_WAITS.values())
    strategy = HPUModelParallelStrategy(data_parallel_size=data_parallel, tensor_parallel_size=WORLD // data_parallel)
    run = trainer(out, strategy, STEPS, clip=CLIP)
    run.fit(model)
    return _report(run.strategy, model.net, expected, waits_before)


def fabric_scenario() -> dict[str, Any]:
    def parallelize(net: nn.Module, mesh: Any) -> nn.Module:
        freeze_first_block(net)
        shard_per_block(net, mesh["data_parallel"])
        return net

    waits_before = sum(UNCONSUMED_WAITS.values())
    strategy = FabricHPUModelParallelStrategy(parallelize, data_parallel_size=WORLD, tensor_parallel_size=1)
    fabric = Fabric(accelerator="hpu", devices=WORLD, strategy=strategy)
    fabric.launch()
    net = fabric.setup_module(Net())
    optimizer = fabric.setup_optimizers(make_optimizer(net.parameters(), adam=False))
    for batch in make_data(STEPS).reshape(STEPS, WORLD, MICRO_BATCH, FEATURES + 1)[:, fabric.global_rank]:
        optimizer.zero_grad()
        fabric.backward(loss_of(net, fabric.to_device(batch)))
        fabric.clip_gradients(net, optimizer, max_norm=CLIP)
        optimizer.step()
    return _report(fabric.strategy, net.module, frozen_reference(), waits_before)


def main(out: Path) -> None:
    torch.set_num_threads(1)
    results: dict[str, Any] = {}
    results["trainer_fsdp2_frozen"] = trainer_scenario(
        out / "frozen", FrozenFirstBlock(STEPS), WORLD, frozen_reference()
    )
    results["fabric_fsdp2_frozen"] = fabric_scenario()
    results["trainer_2d"] = trainer_scenario(out / "2d", DataTimesTensorParallel(STEPS), 1, reference(STEPS, CLIP))
    (out / f"rank{dist.get_rank()}.json").write_text(json.dumps(results, indent=1))
