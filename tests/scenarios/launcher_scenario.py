"""Multi-node scenarios for ``tests/lightning_hpu/distributed/test_launchers.py``: every rank of a job started by some
launcher runs this.

``python launcher_scenario.py train OUT DEVICES NODES``
    Trains one small model three ways on ``NODES`` x ``DEVICES`` HPUs: DDP (``hpu_ddp``), FSDP (``hpu_fsdp``) and
    FSDP2 (``HPUModelParallelStrategy`` with ``fully_shard``). Each rank writes ``OUT/rank<r>.json``: its cluster
    environment, ranks, the HPU its parameters and batches were on, and, per strategy, the largest difference
    between the trained weights and a single-process run over the concatenated batches.

``python launcher_scenario.py stall OUT DEVICES NODES STALLED_RANK TIMEOUT_S``
    DDP with ``timeout=TIMEOUT_S``; at its third training step ``STALLED_RANK`` sleeps instead of training. Each rank
    writes ``OUT/pid<r>`` when it starts training, so the test can see that no process outlives the job.

``python launcher_scenario.py fabric_fail OUT DEVICES NODES``
    Fabric: rank 1 raises while rank 0 sleeps (a rank that fails, with the store's host stalled).

``python launcher_scenario.py elastic OUT DEVICES NODES [STRATEGY]``
    Lightning's fault-tolerant pattern under ``torchrun --max-restarts 1``: a checkpoint at every epoch's end,
    ``fit(ckpt_path="last")``; in the first attempt rank 1 kills itself (``SIGKILL``) in the middle of epoch 2. Each
    rank of the final attempt writes ``OUT/rank<r>.json`` with the weights' difference from an uninterrupted run.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
from lightning.pytorch import LightningModule, Trainer
from lightning.pytorch.callbacks import ModelCheckpoint
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

import lightning_hpu
from lightning_hpu import HPUModelParallelStrategy, HPUParallelStrategy
from tests.helpers.trainer import quiet_trainer

MICRO_BATCH = 2  # per rank
FEATURES = 4
HIDDEN = 8
LR = 0.1
STEPS = 3
EPOCHS = 3  # elastic: one step per epoch per rank


def make_net() -> nn.Sequential:
    torch.manual_seed(7)
    return nn.Sequential(nn.Linear(FEATURES, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, 1))


def dataset(world_size: int, steps: int) -> TensorDataset:
    generator = torch.Generator().manual_seed(3)
    rows = world_size * MICRO_BATCH * steps
    return TensorDataset(torch.randn(rows, FEATURES, generator=generator), torch.randn(rows, 1, generator=generator))


def reference_weights(world_size: int, steps_per_epoch: int, epochs: int = 1) -> dict[str, torch.Tensor]:
    """One process, plain PyTorch: step ``s`` sees the micro-batches of step ``s`` of all ranks together.

    Lightning gives each rank a shuffling ``DistributedSampler`` (seed 0, reshuffled per epoch); the same samplers
    say which rows each rank's micro-batch holds. The loss of the concatenated batch is the mean over all rows, as
    DDP's average of the ranks' means is (equal micro-batches).
    """
    net = make_net()
    data = dataset(world_size, steps_per_epoch)
    optimizer = torch.optim.SGD(net.parameters(), lr=LR)
    samplers = [
        DistributedSampler(data, num_replicas=world_size, rank=rank, shuffle=True) for rank in range(world_size)
    ]
    for epoch in range(epochs):
        shares = []
        for sampler in samplers:
            sampler.set_epoch(epoch)
            shares.append(list(sampler))
        for step in range(steps_per_epoch):
            rows = [row for share in shares for row in share[step * MICRO_BATCH : (step + 1) * MICRO_BATCH]]
            x, y = data[rows]
            optimizer.zero_grad()
            nn.functional.mse_loss(net(x), y).backward()
            optimizer.step()
    return {key: value.detach() for key, value in net.state_dict().items()}


def _plain_key(key: str) -> str:
    for wrapper in ("_forward_module.", "module.", "_fsdp_wrapped_module.", "_checkpoint_wrapped_module."):
        key = key.replace(wrapper, "")
    return key.removeprefix("net.")


class Regression(LightningModule):
    def __init__(
        self, fully_shard_blocks: bool = False, stall_rank: int | None = None, out: Path | None = None
    ) -> None:
        super().__init__()
        self.net = make_net()
        self.fully_shard_blocks = fully_shard_blocks
        self.stall_rank = stall_rank
        self.out = out
        self.devices_seen: set[str] = set()
        self.final_weights: dict[str, torch.Tensor] = {}

    def configure_model(self) -> None:
        if self.fully_shard_blocks:  # FSDP2 under HPUModelParallelStrategy
            from torch.distributed.fsdp import fully_shard

            mesh = self.device_mesh["data_parallel"]
            for layer in (self.net[0], self.net[2]):
                fully_shard(layer, mesh=mesh)
            fully_shard(self.net, mesh=mesh)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        if self.stall_rank == self.global_rank and self.global_step == 2:
            assert self.out is not None
            (self.out / "stalled").write_text(str(time.time()))
            time.sleep(3600)  # a rank that stops taking part: a hung data loader, a deadlock in user code, ...
        self.devices_seen.update({str(x.device), str(next(self.parameters()).device)})
        return nn.functional.mse_loss(self.net(x), y)

    def on_train_end(self) -> None:
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

        assert self.trainer.strategy.model is not None
        state = get_model_state_dict(self.trainer.strategy.model, options=StateDictOptions(full_state_dict=True))
        self.final_weights = {_plain_key(key): value.detach().to("cpu") for key, value in state.items()}

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=LR)


def _trainer(devices: int, nodes: int, strategy: Any, **kwargs: Any) -> Trainer:
    defaults: dict[str, Any] = {
        "accelerator": "hpu",
        "devices": devices,
        "num_nodes": nodes,
        "strategy": strategy,
        "max_steps": STEPS,
        "enable_checkpointing": False,
    }
    return quiet_trainer(**{**defaults, **kwargs})


def _loader(world_size: int, steps: int) -> DataLoader:
    return DataLoader(dataset(world_size, steps), batch_size=MICRO_BATCH)


def _max_diff(weights: dict[str, torch.Tensor], reference: dict[str, torch.Tensor]) -> float:
    assert set(weights) == set(reference), (sorted(weights), sorted(reference))
    return max(float((weights[key] - reference[key]).abs().max()) for key in reference)


def train(out: Path, devices: int, nodes: int) -> None:
    world_size = devices * nodes
    reference = reference_weights(world_size, STEPS)  # a host backward pass before any HPU work, as scripts do
    report: dict[str, Any] = {}
    weights = {}
    strategies = {
        "ddp": "hpu_ddp",
        "fsdp": "hpu_fsdp",
        "fsdp2": HPUModelParallelStrategy(data_parallel_size=world_size, tensor_parallel_size=1),
    }
    for name, strategy in strategies.items():
        model = Regression(fully_shard_blocks=name == "fsdp2")
        trainer = _trainer(devices, nodes, strategy)
        trainer.fit(model, _loader(world_size, STEPS))
        weights[name] = model.final_weights
        report[name] = {"strategy": type(trainer.strategy).__name__, "devices": sorted(model.devices_seen)}
        report.update(
            environment=type(trainer.strategy.cluster_environment).__name__,
            global_rank=trainer.global_rank,
            local_rank=trainer.local_rank,
            node_rank=trainer.node_rank,
            world_size=trainer.world_size,
        )
    for name in strategies:
        report[name]["max_diff_to_reference"] = _max_diff(weights[name], reference)
    (out / f"rank{report['global_rank']}.json").write_text(json.dumps(report))


def stall(out: Path, devices: int, nodes: int, stalled_rank: int, timeout_s: float) -> None:
    world_size = devices * nodes
    model = Regression(stall_rank=stalled_rank, out=out)
    strategy = HPUParallelStrategy(timeout=timedelta(seconds=timeout_s))

    trainer = _trainer(devices, nodes, strategy, max_steps=100)
    original_on_train_start = model.on_train_start

    def on_train_start() -> None:
        (out / f"pid{trainer.global_rank}").write_text(str(os.getpid()))
        original_on_train_start()

    model.on_train_start = on_train_start  # type: ignore[method-assign]
    trainer.fit(model, _loader(world_size, 100))


def fabric_fail(out: Path, devices: int, nodes: int) -> None:
    """Fabric: rank 0 stalls in a long host computation while rank 1 raises; rank 0 must not stay behind."""
    from lightning.fabric import Fabric

    fabric = Fabric(accelerator="hpu", devices=devices, num_nodes=nodes, strategy="hpu_ddp")
    fabric.launch()
    (out / f"pid{fabric.global_rank}").write_text(str(os.getpid()))
    fabric.barrier()
    (out / "stalled").write_text(str(time.time()))
    if fabric.global_rank == 1:
        raise ValueError("rank 1's data shard is missing")
    time.sleep(3600)


class KillOnce(ModelCheckpoint):
    """Saves ``last.ckpt`` at every epoch's end; in the first attempt, rank 1 dies mid-epoch 2."""

    def on_train_batch_start(self, trainer: Trainer, pl_module: LightningModule, batch: Any, batch_idx: int) -> None:
        first_attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0"
        if first_attempt and trainer.global_rank == 1 and trainer.current_epoch == 1 and batch_idx == 1:
            os.kill(os.getpid(), signal.SIGKILL)


def elastic(out: Path, devices: int, nodes: int, strategy: str = "hpu_ddp") -> None:
    world_size = devices * nodes
    steps_per_epoch = 2
    checkpoints = KillOnce(dirpath=out / "checkpoints", save_last=True, every_n_epochs=1)
    trainer = _trainer(
        devices,
        nodes,
        strategy,
        max_steps=-1,
        max_epochs=EPOCHS,
        enable_checkpointing=True,
        callbacks=[checkpoints],
    )
    model = Regression()
    trainer.fit(model, _loader(world_size, steps_per_epoch), ckpt_path="last")
    report = {
        "strategy": type(trainer.strategy).__name__,
        "restart": int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")),
        "global_step": trainer.global_step,
        "max_diff_to_reference": _max_diff(model.final_weights, reference_weights(world_size, steps_per_epoch, EPOCHS)),
    }
    (out / f"rank{trainer.global_rank}.json").write_text(json.dumps(report))


def main(argv: list[str]) -> None:
    assert lightning_hpu.__name__  # registers the HPU names with Lightning
    mode, out, devices, nodes = argv[0], Path(argv[1]), int(argv[2]), int(argv[3])
    out.mkdir(parents=True, exist_ok=True)
    if mode == "train":
        train(out, devices, nodes)
    elif mode == "stall":
        stall(out, devices, nodes, stalled_rank=int(argv[4]), timeout_s=float(argv[5]))
    elif mode == "fabric_fail":
        fabric_fail(out, devices, nodes)
    elif mode == "elastic":
        elastic(out, devices, nodes, *argv[4:5])
    else:
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
