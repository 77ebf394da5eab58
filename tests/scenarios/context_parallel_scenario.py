"""Context parallelism on 2 stand-in HPUs, run by ``tests/lightning_hpu/distributed/test_context_parallel.py`` in the
two-rank launch.

The causal language model of ``examples/context_parallel.py`` trains with ``context_parallel_size=2`` (so each
rank holds half of every sequence) three ways, and the losses are compared with one process of plain PyTorch over
whole sequences (the same model, data and optimizer):

* ``trainer``: the example's ``train`` (``HPUModelParallelStrategy(context_parallel_size=2)``), parameters
  replicated and no ``configure_model`` hook (the strategy averages gradients over the data x context parallel
  ranks); hooks record the shapes the model sees on this rank;
* ``trainer_fsdp``: the same with FSDP2 over ``gradient_mesh(device_mesh)`` in ``configure_model``;
* ``fabric``: Fabric's strategy without a ``parallelize_fn``, with ``fabric.strategy.shard_sequence`` and
  ``fabric.backward``.

Each rank writes ``<out>/rank<r>.json``.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
import torch.distributed as dist
from lightning.fabric import Fabric
from torch import nn

from lightning_hpu import ContextParallelAttention
from lightning_hpu.fabric.strategies import HPUModelParallelStrategy as FabricHPUModelParallelStrategy

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "context_parallel.py"
LENGTH, STEPS, BATCH = 16, 3, 2


def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("context_parallel_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


example = _example()


def reference(trainer_order: bool) -> tuple[list[float], torch.Tensor]:
    """One process, plain PyTorch on the CPU, whole sequences: the losses per step and the trained weights.

    ``trainer_order``: the samples in the order of the Trainer's distributed sampler over one data-parallel rank (the
    Trainer shuffles training data, with the same seed on every rank); otherwise in order, as Fabric keeps them.
    """
    model = example.TinyCausalLM(LENGTH)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    dataset = example.RandomTokens(STEPS * BATCH, LENGTH)
    sampler = torch.utils.data.DistributedSampler(dataset, num_replicas=1, rank=0, shuffle=True, seed=0)
    data = torch.utils.data.DataLoader(dataset, batch_size=BATCH, sampler=sampler if trainer_order else None)
    losses = []
    for batch in data:
        optimizer.zero_grad()
        loss = model(**batch)
        loss.backward()
        optimizer.step()
        losses.append(float(loss))
    return losses, flat(model)


def flat(model: nn.Module) -> torch.Tensor:
    state = {key: getattr(value, "full_tensor", lambda v=value: v)() for key, value in model.state_dict().items()}
    return torch.cat([state[key].detach().reshape(-1).float().cpu() for key in sorted(state)])


def record_shapes(model: nn.Module) -> dict[str, list[list[int]]]:
    """Hooks that note the shapes this rank's model sees: block inputs, attention inputs, the local attention's."""
    seen: dict[str, list[list[int]]] = {"block_input": [], "attention_query": [], "local_attention_query": []}
    for module in model.modules():
        if isinstance(module, example.Block):
            module.register_forward_pre_hook(lambda _, args: seen["block_input"].append(list(args[0].shape)))
        if isinstance(module, ContextParallelAttention):
            module.register_forward_pre_hook(lambda _, args: seen["attention_query"].append(list(args[0].shape)))
            local = module.attention

            def noting(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, _local: Any = local, **kw: Any) -> Any:
                seen["local_attention_query"].append(list(q.shape))
                return _local(q, k, v, **kw)

            module.attention = noting
    seen["first_position"] = []
    model.register_forward_pre_hook(
        lambda _, args, kwargs: seen["first_position"].append([int(kwargs["position_ids"][0, 0])]), with_kwargs=True
    )
    return seen


def trainer_scenario(out: Path, fsdp: bool) -> dict[str, Any]:
    language_model = example.ShardedLanguageModel if fsdp else example.LanguageModel  # the latter has no hook
    model = language_model(LENGTH, batch_size=BATCH, samples=STEPS * BATCH)
    seen = record_shapes(model.model)
    example.train(model, devices=2, context_parallel=2, steps=STEPS, root=str(out))
    trainer = model.trainer
    mesh = trainer.strategy.device_mesh
    return {
        "mesh": dict(zip(mesh.mesh_dim_names or (), mesh.shape, strict=True)),
        "losses": model.global_losses,
        "weights": flat(model.model).tolist(),
        "seen": seen,
    }


def fabric_scenario() -> dict[str, Any]:
    strategy = FabricHPUModelParallelStrategy(context_parallel_size=2)  # replicated: no parallelize_fn
    fabric = Fabric(accelerator="hpu", devices=2, strategy=strategy)
    fabric.launch()
    model = fabric.setup_module(example.TinyCausalLM(LENGTH))
    optimizer = fabric.setup_optimizers(torch.optim.AdamW(model.parameters(), lr=1e-2))
    data = fabric.setup_dataloaders(
        torch.utils.data.DataLoader(example.RandomTokens(STEPS * BATCH, LENGTH), batch_size=BATCH)
    )
    losses, lengths = [], []
    for batch in data:
        batch = fabric.strategy.shard_sequence(batch)
        lengths.append(batch["input_ids"].shape[1])
        optimizer.zero_grad()
        loss = model(**batch)
        fabric.backward(loss)
        optimizer.step()
        losses.append(float(fabric.all_reduce(loss.detach(), reduce_op="mean")))
    return {"losses": losses, "lengths": lengths, "weights": flat(model.module).tolist()}


def main(out: Path) -> None:
    results: dict[str, Any] = {}
    for name, trainer_order in (("reference_trainer", True), ("reference_fabric", False)):
        losses, weights = reference(trainer_order)
        results[name] = {"losses": losses, "weights": weights.tolist()}
    results["trainer"] = trainer_scenario(out / "trainer", fsdp=False)
    results["trainer_fsdp"] = trainer_scenario(out / "trainer_fsdp", fsdp=True)
    results["fabric"] = fabric_scenario()
    results["length"] = LENGTH
    (out / f"rank{dist.get_rank()}.json").write_text(json.dumps(results))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
