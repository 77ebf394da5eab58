"""Multi-process scenarios for the sharded HPU strategies, run by
``tests/lightning_hpu/distributed/test_sharding_multiprocess.py``.

Every process runs this script (Lightning's launcher re-runs it for rank 1). On 2 stand-in devices over the stand-in
``"hccl"`` group it trains a small transformer-like MLP (blocks wrapped per block) several ways, each rank feeding
its half of every global batch (the whole batch under tensor parallelism), and compares with a single-process
PyTorch run over the global batches:

* ``fsdp``: ``Trainer(strategy="fsdp")`` with clipping by norm, then a full checkpoint (read by the test);
* ``fsdp_resume``: a sharded checkpoint after 2 steps, resumed with ``ckpt_path=`` to 4 steps, against 4 steps in
  one go (auto-wrap per block, activation checkpointing, Adam);
* ``fabric``: a Fabric loop with ``strategy="fsdp"`` and ``fabric.clip_gradients``, a sharded save and load;
* ``fsdp2`` and ``tensor_parallel``: ``hpu_model_parallel`` with ``fully_shard`` / ``parallelize_module`` in
  ``configure_model``, clipping by norm; ``fabric_model_parallel``: Fabric's, with a ``parallelize_fn``;
* ``fsdp2_avg``: torch's own ``fully_shard`` without the strategy sends ``AVG``, which the stand-in refuses;
* ``hybrid_one_node``: ``sharding_strategy="HYBRID_SHARD"`` on one node warns and shards as ``FULL_SHARD``;
* ``norms_bf16``: ``precision="bf16-mixed"`` on a model whose norm layers get an fp32 input (bf16 weights).

Every reduce op that reaches the stand-in group is counted. Each rank writes ``<out>/rank<r>.json``.

Usage: ``python sharded_scenario.py OUT_DIR``, or ``main(OUT_DIR)`` from ``two_device_scenario.py`` (last there: it
sets one thread per process).
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from lightning.fabric import Fabric
from lightning.pytorch import LightningModule, Trainer
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from gaudi_standin.distributed import hccl_rules, process_group
from lightning_hpu import HPUFSDPStrategy, HPUModelParallelStrategy
from tests.helpers.sharded_reference import (
    CLIP,
    FEATURES,
    MICRO_BATCH,
    WORLD,
    Block,
    Net,
    flat,
    full_weights,
    loss_of,
    make_data,
    make_optimizer,
    reference,
)
from tests.helpers.trainer import quiet_trainer

#: Reduce ops that reached the stand-in "hccl" group (through its op check), by scenario.
OPS_SEEN: Counter[str] = Counter()
_check = hccl_rules.check_hccl_reduce_op


def _counting_check(op: Any) -> None:
    OPS_SEEN[str(getattr(op, "op", op)).split(".")[-1]] += 1
    _check(op)


hccl_rules.check_hccl_reduce_op = _counting_check  # where the group's option checks look it up
process_group.check_hccl_reduce_op = _counting_check  # and where the group calls it itself


class Model(LightningModule):
    def __init__(self, steps: int, adam: bool = False, parallelize: str | None = None) -> None:
        super().__init__()
        self.net = Net()
        self.steps = steps
        self.adam = adam
        self.parallelize = parallelize

    def configure_model(self) -> None:
        if self.parallelize is None:
            return
        from torch.distributed.fsdp import fully_shard
        from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

        if self.parallelize == "fsdp2":
            mesh = self.device_mesh["data_parallel"]
            for block in self.net.blocks:
                fully_shard(block, mesh=mesh)
            fully_shard(self.net, mesh=mesh)
        else:
            mesh = self.device_mesh["tensor_parallel"]
            for block in self.net.blocks:
                parallelize_module(block, mesh, {"fc1": ColwiseParallel(), "fc2": RowwiseParallel()})

    def on_train_start(self) -> None:
        # The rank watchdog (no rank outlives its job) runs while training; teardown stops it.
        self.watched = getattr(self.trainer.strategy, "_watchdog", None) is not None

    def training_step(self, batch: torch.Tensor, batch_idx: int) -> torch.Tensor:
        # 1 on rank 0, 11 on rank 1: the global mean is 6 (Lightning's "mean" sends AVG unless served by HCCL's ops).
        self.log("rank_value", torch.tensor(10.0 * self.global_rank + 1.0), sync_dist=True, on_epoch=True)
        return loss_of(self.net, batch)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return make_optimizer(self.parameters(), self.adam)

    def train_dataloader(self) -> DataLoader:
        sampler = self.trainer.strategy.distributed_sampler_kwargs or {"num_replicas": 1, "rank": 0}
        replicas, rank = sampler["num_replicas"], sampler["rank"]
        data = make_data(self.steps).reshape(self.steps, replicas, -1, FEATURES + 1)[:, rank]
        return DataLoader(
            TensorDataset(data.reshape(-1, FEATURES + 1)),
            batch_size=WORLD * MICRO_BATCH // replicas,
            collate_fn=lambda rows: torch.stack([row[0] for row in rows]),
        )


def trainer(
    root: Path, strategy: Any, steps: int = -1, clip: float | None = None, epochs: int | None = None
) -> Trainer:
    return quiet_trainer(
        str(root),
        accelerator="hpu",
        devices=WORLD,
        strategy=strategy,
        max_steps=steps,
        max_epochs=epochs,
        gradient_clip_val=clip,
        use_distributed_sampler=False,
        enable_checkpointing=False,
    )


def fsdp_scenario(out: Path) -> dict[str, Any]:
    steps = 3
    run = trainer(out, "fsdp", steps, clip=CLIP)
    model = Model(steps)
    run.fit(model)
    weights = full_weights(run.strategy.model, model.net)
    checkpoint = out / "full.ckpt"
    run.save_checkpoint(checkpoint)
    return {
        "strategy": type(run.strategy).__name__,
        "precision": type(run.precision_plugin).__name__,
        "process_group": type(dist.group.WORLD).__name__,
        "rank_watchdog": model.watched,
        "max_diff_to_reference": float((weights - reference(steps, CLIP)).abs().max()),
        "rank_value_epoch": float(run.callback_metrics["rank_value_epoch"]),
        "full_checkpoint": str(checkpoint),
        "reference": reference(steps, CLIP).tolist(),
    }


def resume_scenario(out: Path) -> dict[str, Any]:
    def strategy() -> HPUFSDPStrategy:
        return HPUFSDPStrategy(
            auto_wrap_policy={Block}, activation_checkpointing_policy={Block}, state_dict_type="sharded"
        )

    # Epochs of 2 steps: the checkpoint falls on an epoch's end, where a plain DataLoader resumes exactly.
    first = trainer(out / "first", strategy(), epochs=1)
    first.fit(Model(2, adam=True))
    checkpoint = out / "sharded.ckpt"
    first.save_checkpoint(checkpoint)
    resumed_run = trainer(out / "resumed", strategy(), epochs=2)
    resumed = Model(2, adam=True)
    resumed_run.fit(resumed, ckpt_path=checkpoint)
    resumed_weights = full_weights(resumed_run.strategy.model, resumed.net)
    straight_run = trainer(out / "straight", strategy(), epochs=2)
    straight = Model(2, adam=True)
    straight_run.fit(straight)
    straight_weights = full_weights(straight_run.strategy.model, straight.net)
    return {
        "checkpoint_is_folder": checkpoint.is_dir(),
        "shard_files": sorted(path.name for path in checkpoint.iterdir()),
        "resumed_global_step": resumed_run.global_step,
        "max_diff_resumed_to_straight": float((resumed_weights - straight_weights).abs().max()),
        "max_diff_straight_to_reference": float(
            (straight_weights - reference(4, None, adam=True, per_epoch=2)).abs().max()
        ),
        "max_diff_first_to_straight": float(
            (full_weights(first.strategy.model, first.lightning_module.net) - straight_weights).abs().max()
        ),
    }


def fabric_scenario(out: Path) -> dict[str, Any]:
    steps = 3
    fabric = Fabric(accelerator="hpu", devices=WORLD, strategy="fsdp")
    fabric.launch()
    net = fabric.setup_module(Net())
    optimizer = fabric.setup_optimizers(make_optimizer(net.parameters(), adam=False))
    data = make_data(steps).reshape(steps, WORLD, MICRO_BATCH, FEATURES + 1)
    for batch in data[:, fabric.global_rank]:
        optimizer.zero_grad()
        fabric.backward(loss_of(net, fabric.to_device(batch)))
        fabric.clip_gradients(net, optimizer, max_norm=CLIP)
        optimizer.step()
    weights = full_weights(net._forward_module, net.module)
    state = {"model": net, "optimizer": optimizer, "step": steps}
    fabric.save(out / "fabric.ckpt", state)
    with torch.no_grad():
        for parameter in net.parameters():
            parameter.zero_()
    remainder = fabric.load(out / "fabric.ckpt", state)
    return {
        "strategy": type(fabric.strategy).__name__,
        "precision": type(fabric.strategy.precision).__name__,
        "rank_watchdog": getattr(fabric.strategy, "_watchdog", None) is not None,
        "max_diff_to_reference": float((weights - reference(steps, CLIP)).abs().max()),
        "max_diff_after_load": float((full_weights(net._forward_module, net.module) - weights).abs().max()),
        "loaded_step": state["step"],
        "remainder": remainder,
        "mean": float(fabric.all_reduce(torch.tensor(10.0 * fabric.global_rank + 1.0), reduce_op="mean")),
    }


def fabric_model_parallel_scenario() -> dict[str, Any]:
    """Fabric's HPUModelParallelStrategy with a ``parallelize_fn``: FSDP2 per block, clipping across the shards."""
    from torch.distributed.fsdp import fully_shard

    from lightning_hpu.fabric.strategies import HPUModelParallelStrategy as FabricHPUModelParallelStrategy

    def parallelize(net: nn.Module, mesh: Any) -> nn.Module:
        for block in net.blocks:
            fully_shard(block, mesh=mesh["data_parallel"])
        fully_shard(net, mesh=mesh["data_parallel"])
        return net

    steps = 3
    strategy = FabricHPUModelParallelStrategy(parallelize, data_parallel_size=2, tensor_parallel_size=1)
    fabric = Fabric(accelerator="hpu", devices=WORLD, strategy=strategy)
    fabric.launch()
    net = fabric.setup_module(Net())
    optimizer = fabric.setup_optimizers(make_optimizer(net.parameters(), adam=False))
    for batch in make_data(steps).reshape(steps, WORLD, MICRO_BATCH, FEATURES + 1)[:, fabric.global_rank]:
        optimizer.zero_grad()
        fabric.backward(loss_of(net, fabric.to_device(batch)))
        fabric.clip_gradients(net, optimizer, max_norm=CLIP)
        optimizer.step()
    return {
        "strategy": type(fabric.strategy).__name__,
        "max_diff_to_reference": float((flat(net.module.state_dict()) - reference(steps, CLIP)).abs().max()),
    }


def model_parallel_scenario(out: Path, parallelize: str) -> dict[str, Any]:
    steps = 3
    strategy: Any = (
        HPUModelParallelStrategy(data_parallel_size=2, tensor_parallel_size=1)
        if parallelize == "fsdp2"
        else "model_parallel"
    )
    run = trainer(out / parallelize, strategy, steps, clip=CLIP)
    model = Model(steps, parallelize=parallelize)
    run.fit(model)
    weights = full_weights(model, model.net)
    run.save_checkpoint(out / f"{parallelize}.ckpt")
    return {
        "strategy": type(run.strategy).__name__,
        "mesh": dict(zip(run.strategy.device_mesh.mesh_dim_names or (), run.strategy.device_mesh.shape, strict=True)),
        "mesh_device_type": run.strategy.device_mesh.device_type,
        "dtensor_parameters": sum(hasattr(p, "full_tensor") for p in model.net.parameters()),
        "max_diff_to_reference": float((weights - reference(steps, CLIP)).abs().max()),
        "rank_value_epoch": float(run.callback_metrics["rank_value_epoch"]),
        "checkpoint_is_folder": (out / f"{parallelize}.ckpt").is_dir(),
    }


def fsdp2_avg_scenario() -> dict[str, Any]:
    """Torch's FSDP2 alone (fp32) reduce-scatters with AVG: the stand-in must refuse it, as HCCL does."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    from lightning_hpu.distributed.sharding import force_sum_reduction

    results: dict[str, Any] = {}
    for forced in (False, True):
        module = Net().to("hpu")
        fully_shard(module, mesh=init_device_mesh("hpu", (WORLD,)))
        if forced:
            force_sum_reduction(module)
        try:
            module(torch.ones(2, FEATURES, device="hpu")).sum().backward()
            results["forced" if forced else "default"] = "ran"
        except RuntimeError as error:
            results["forced" if forced else "default"] = str(error)
    return results


def hybrid_one_node_scenario(out: Path) -> dict[str, Any]:
    import warnings

    steps = 3
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = trainer(out, HPUFSDPStrategy(sharding_strategy="HYBRID_SHARD", auto_wrap_policy={Block}), steps, CLIP)
    model = Model(steps)
    run.fit(model)
    weights = full_weights(run.strategy.model, model.net)
    return {
        "warned": any("runs as sharding_strategy='FULL_SHARD'" in str(w.message) for w in caught),
        "shard_group_size": run.strategy.model.process_group.size(),
        "max_diff_to_reference": float((weights - reference(steps, CLIP)).abs().max()),
    }


class NormModel(Model):
    """The MLP with norm layers after an fp32 add (as a positional encoding is), trained in bf16-mixed."""

    def __init__(self, steps: int) -> None:
        super().__init__(steps)
        self.norms = nn.ModuleList([nn.LayerNorm(FEATURES), nn.GroupNorm(2, FEATURES)])
        self.losses: list[float] = []

    def training_step(self, batch: torch.Tensor, batch_idx: int) -> torch.Tensor:
        hidden = self.net.blocks(batch[:, :FEATURES]) + torch.zeros(FEATURES, device=self.device)
        for norm in self.norms:
            hidden = norm(hidden)
        loss = nn.functional.mse_loss(self.net.head(hidden).float(), batch[:, FEATURES:])
        self.losses.append(float(loss))
        return loss


def norms_bf16_scenario(out: Path) -> dict[str, Any]:
    run = quiet_trainer(
        str(out),
        accelerator="hpu",
        devices=WORLD,
        strategy="fsdp",
        precision="bf16-mixed",
        max_steps=3,
        use_distributed_sampler=False,
        enable_checkpointing=False,
    )
    model = NormModel(3)
    run.fit(model)
    return {"steps": len(model.losses), "finite": all(loss == loss for loss in model.losses)}


def main(out: Path) -> None:
    torch.set_num_threads(1)
    results: dict[str, Any] = {}
    results["fsdp"] = fsdp_scenario(out)
    results["fsdp_resume"] = resume_scenario(out)
    results["fsdp2"] = model_parallel_scenario(out, "fsdp2")
    results["tensor_parallel"] = model_parallel_scenario(out, "tensor_parallel")
    results["fabric"] = fabric_scenario(out)
    results["fabric_model_parallel"] = fabric_model_parallel_scenario()
    results["ops_seen"] = dict(OPS_SEEN)
    results["fsdp2_avg"] = fsdp2_avg_scenario()
    results["hybrid_one_node"] = hybrid_one_node_scenario(out)
    results["norms_bf16"] = norms_bf16_scenario(out)
    results["env_rank"] = os.environ.get("LOCAL_RANK", "0")
    (out / f"rank{dist.get_rank()}.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
