"""Context parallelism (``context_parallel_size`` of ``HPUModelParallelStrategy``, ``ContextParallelAttention``).

The two-rank runs are ``context_parallel_scenario.py`` in the session's launch (``two_device_run.py``): a causal
language model trained with ``context_parallel_size=2`` must give the losses of one plain PyTorch process over whole
sequences to ``rtol=1e-5`` (fp32), with half of every sequence on each rank. The refusals run in this process.
"""

from __future__ import annotations

import gc
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
import torch.distributed as dist
from lightning.fabric import Fabric
from lightning.pytorch import Trainer
from torch import nn

from lightning_hpu import ContextParallelAttention, HPUModelParallelStrategy
from lightning_hpu.distributed import context_parallel
from lightning_hpu.fabric.strategies import HPUModelParallelStrategy as FabricHPUModelParallelStrategy
from lightning_hpu.runtime import HPUConfigurationError
from tests.helpers.standin import reset_backend
from tests.helpers.two_device_run import TwoDeviceRun

LOSS_RTOL = 1e-5  # fp32: the same sums in another order (attention over gathered heads, gradients all-reduced)
WEIGHT_ATOL = 1e-4  # after 3 AdamW steps of lr 1e-2: 1% of one step (Adam magnifies near-zero gradients)


@pytest.mark.multiprocess
def test_context_parallel_training_matches_whole_sequences_on_two_standin_devices(
    two_device_run: TwoDeviceRun,
) -> None:
    for rank, report in enumerate(two_device_run.reports("context_parallel")):
        length = report["length"]
        for name, reference in (
            ("trainer", "reference_trainer"),
            ("trainer_fsdp", "reference_trainer"),
            ("fabric", "reference_fabric"),
        ):
            expected = report[reference]
            assert report[name]["losses"] == pytest.approx(expected["losses"], rel=LOSS_RTOL), (rank, name)
            weights = torch.tensor(report[name]["weights"])
            assert torch.allclose(weights, torch.tensor(expected["weights"]), rtol=0, atol=WEIGHT_ATOL), (rank, name)

        trainer = report["trainer"]
        assert trainer["mesh"] == {"data_parallel": 1, "context_parallel": 2, "tensor_parallel": 1}
        seen = trainer["seen"]
        # Each rank holds half of every sequence (batch 2, width 32, 4 heads of 8) ...
        assert seen["block_input"] and all(shape == [2, length // 2, 32] for shape in seen["block_input"])
        assert all(shape == [2, 4, length // 2, 8] for shape in seen["attention_query"])
        # ... its own half: rank r starts at position r * length / 2 ...
        assert {first for (first,) in seen["first_position"]} == {rank * length // 2}
        # ... and attention sees the whole sequence for half of the heads.
        assert all(shape == [2, 2, length, 8] for shape in seen["local_attention_query"])
        assert report["fabric"]["lengths"] == [length // 2] * 3


# --- refusals --------------------------------------------------------------------------------------------


@pytest.fixture
def two_devices(standin: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIGHTNING_HPU_CPU_DEVICES", "2")
    reset_backend()


@pytest.mark.usefixtures("two_devices")
@pytest.mark.parametrize("size", [3, 0, "2"])
def test_a_context_parallel_size_that_does_not_divide_the_devices_is_refused(size: Any) -> None:
    sentence = f"context_parallel_size={size!r} must be a positive divisor of the 2 devices in use"
    with pytest.raises(HPUConfigurationError, match=sentence):
        Trainer(accelerator="hpu", devices=2, strategy=HPUModelParallelStrategy(context_parallel_size=size))
    with pytest.raises(HPUConfigurationError, match=sentence):
        strategy = FabricHPUModelParallelStrategy(lambda module, mesh: module, context_parallel_size=size)
        Fabric(accelerator="hpu", devices=2, strategy=strategy)


@pytest.mark.usefixtures("two_devices")
def test_mesh_sizes_must_multiply_to_the_devices() -> None:
    with pytest.raises(HPUConfigurationError, match=r"data_parallel_size=2 x context_parallel_size=2 x"):
        Trainer(
            accelerator="hpu",
            devices=2,
            strategy=HPUModelParallelStrategy(data_parallel_size=2, context_parallel_size=2),
        )
    assert context_parallel.resolve_sizes("auto", 2, "auto", 1, 8) == (4, 1)
    assert context_parallel.resolve_sizes("auto", 2, 2, 1, 8) == (2, 2)
    assert context_parallel.resolve_sizes("auto", 1, "auto", 1, 8) == ("auto", "auto")  # Lightning's defaults
    with pytest.raises(HPUConfigurationError, match=r"data_parallel_size=3 x context_parallel_size=2 x"):
        context_parallel.resolve_sizes(3, 2, 1, 1, 8)


@pytest.mark.parametrize(("context", "tensor"), [(1, "auto"), (2, 2)])
def test_fabric_needs_a_parallelize_fn_unless_the_model_stays_replicated(context: int, tensor: Any) -> None:
    with pytest.raises(HPUConfigurationError, match=r"^`HPUModelParallelStrategy\(parallelize_fn=None\)` leaves"):
        FabricHPUModelParallelStrategy(context_parallel_size=context, tensor_parallel_size=tensor)
    # Replicated parameters (the Trainer's no-configure_model case is the two-rank "trainer" run above).
    strategy = FabricHPUModelParallelStrategy(context_parallel_size=2)
    model = nn.Linear(2, 2)
    assert strategy._parallelize_fn(model, SimpleNamespace(device_type="cpu")) is model


class _Mesh:
    """What the functions read of a ``DeviceMesh`` with a ``"context_parallel"`` dimension of ``context`` ranks."""

    def __init__(self, context: int, rank: int = 0) -> None:
        self.mesh_dim_names = ("data_parallel", "context_parallel", "tensor_parallel")
        self.context, self.rank = context, rank

    def __getitem__(self, name: str) -> Any:
        size = self.context if name == "context_parallel" else 1
        return SimpleNamespace(size=lambda: size, get_group=lambda: None)

    def get_local_rank(self, name: str) -> int:
        return self.rank


def test_a_batch_keeps_this_ranks_part_of_every_sequence() -> None:
    tokens = torch.arange(24).reshape(2, 12)
    batch = {"input_ids": tokens, "labels": tokens + 1, "lengths": torch.tensor([12, 12])}
    part = context_parallel.shard_sequence(batch, _Mesh(context=3, rank=1))
    assert torch.equal(part["input_ids"], tokens[:, 4:8]) and torch.equal(part["labels"], tokens[:, 4:8] + 1)
    assert torch.equal(part["lengths"], batch["lengths"])  # one dimension: no sequence to split
    with pytest.raises(HPUConfigurationError, match=r"context_parallel_size=5 must divide the sequence length"):
        context_parallel.shard_sequence(batch, _Mesh(context=5))


def test_a_mesh_keeps_its_gradient_mesh_when_an_equal_older_mesh_is_collected(tmp_path: Path) -> None:
    # torch 2.13+ meshes of the same layout compare and hash equal: a table keyed by mesh lost the second run's
    # flattened mesh when the first run's mesh was collected, and fully_shard over it was refused mid-job.
    if dist.is_initialized():  # an in-process run of an earlier test left its group
        dist.destroy_process_group()
    dist.init_process_group("gloo", store=dist.FileStore(str(tmp_path / "store"), 1), rank=0, world_size=1)
    try:
        first = context_parallel.build_mesh("cpu", 1, 1, 1)
        second = context_parallel.build_mesh("cpu", 1, 1, 1)
        del first
        gc.collect()
        assert context_parallel.gradient_mesh(second).mesh_dim_names == (context_parallel.DATA_CONTEXT,)
    finally:
        dist.destroy_process_group()


def test_heads_that_the_ranks_cannot_share_are_refused() -> None:
    model = nn.Sequential(ContextParallelAttention(num_heads=3))
    with pytest.raises(HPUConfigurationError, match=r"context_parallel_size=2 must divide the number of attention"):
        context_parallel.connect_attention(model, _Mesh(context=2))


def test_a_model_without_context_parallel_attention_is_refused() -> None:
    with pytest.raises(HPUConfigurationError, match=r"context_parallel_size=2 needs the model's attention to be"):
        context_parallel.connect_attention(nn.Linear(2, 2), _Mesh(context=2))
    assert context_parallel.connect_attention(nn.Linear(2, 2), _Mesh(context=1)) == 0  # nothing asked


def test_unconnected_attention_is_the_local_attention() -> None:
    q, k, v = (torch.randn(2, 4, 6, 8, generator=torch.Generator().manual_seed(i)) for i in range(3))
    expected = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert torch.equal(ContextParallelAttention()(q, k, v, is_causal=True), expected)
