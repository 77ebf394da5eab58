"""HPUParallelStrategy and the HCCL-safe collectives, in one process (a simulated second rank where needed)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import torch
import torch.distributed as dist
from lightning.fabric import Fabric
from lightning.pytorch import Trainer
from torch.distributed import ReduceOp

from lightning_hpu import HPUParallelStrategy
from lightning_hpu.fabric.strategies import HPUParallelStrategy as FabricHPUParallelStrategy
from lightning_hpu.runtime import get_backend
from lightning_hpu.runtime.standin.process_group import register_hccl_standin_backend
from lightning_hpu.strategies import collectives
from lightning_hpu.strategies.collectives import hccl_reduce_op


def _trainer(**kwargs: Any) -> Trainer:
    return Trainer(logger=False, enable_progress_bar=False, enable_model_summary=False, **kwargs)


# --- reduce ops -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reduce_op", "expected"),
    [
        ("mean", (ReduceOp.SUM, True)),
        ("AVG", (ReduceOp.SUM, True)),
        (ReduceOp.AVG, (ReduceOp.SUM, True)),
        (ReduceOp(ReduceOp.AVG), (ReduceOp.SUM, True)),
        (None, (ReduceOp.SUM, False)),
        ("sum", (ReduceOp.SUM, False)),
        ("max", (ReduceOp.MAX, False)),
        (ReduceOp(ReduceOp.MIN), (ReduceOp.MIN, False)),
        (ReduceOp.PRODUCT, (ReduceOp.PRODUCT, False)),
    ],
)
def test_reduce_ops_become_ops_hccl_runs(reduce_op: Any, expected: tuple[Any, bool]) -> None:
    assert hccl_reduce_op(reduce_op) == expected


@pytest.mark.parametrize("reduce_op", ["median", ReduceOp.BAND, ReduceOp.BXOR])
def test_reduce_ops_hccl_lacks_are_refused_before_any_collective(reduce_op: Any) -> None:
    with pytest.raises(ValueError, match="reduce_op="):
        collectives.all_reduce(torch.ones(2), reduce_op=reduce_op)


# --- collectives against a simulated two-rank world ---------------------------------------------------


@pytest.fixture
def two_ranks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, Any, torch.dtype]]]:
    """Pretend to be rank 0 of 2 whose peer holds the same tensors; record (collective, op, dtype)."""
    calls: list[tuple[str, Any, torch.dtype]] = []

    def all_reduce(tensor: torch.Tensor, op: Any = ReduceOp.SUM, group: Any = None) -> None:
        calls.append(("all_reduce", op, tensor.dtype))
        if op == ReduceOp.SUM:
            tensor.mul_(2)

    def broadcast(tensor: torch.Tensor, src: int = 0, group: Any = None) -> None:
        calls.append(("broadcast", None, tensor.dtype))

    monkeypatch.setattr(collectives, "_distributed_is_initialized", lambda: True)
    monkeypatch.setattr(dist, "all_reduce", all_reduce)
    monkeypatch.setattr(dist, "broadcast", broadcast)
    monkeypatch.setattr(dist, "get_world_size", lambda group=None: 2)
    monkeypatch.setattr(dist, "get_rank", lambda group=None: 0)
    yield calls


def test_mean_is_a_sum_then_a_division(two_ranks: list[Any]) -> None:
    tensor = torch.tensor([1.0, 3.0])
    assert collectives.all_reduce(tensor, reduce_op="mean") is tensor
    assert tensor.tolist() == [1.0, 3.0]
    assert two_ranks == [("all_reduce", ReduceOp.SUM, torch.float32)]


def test_int64_travels_as_int32_and_comes_back(two_ranks: list[Any]) -> None:
    tensor = torch.tensor([3, 5])
    collectives.all_reduce(tensor, reduce_op="sum")
    assert tensor.dtype == torch.int64 and tensor.tolist() == [6, 10]
    collectives.all_reduce(tensor, reduce_op=ReduceOp.AVG)
    assert tensor.tolist() == [6, 10]
    assert {call[2] for call in two_ranks} == {torch.int32}


def test_fast_ddp_reduces_each_dtype_once_pre_scaled(two_ranks: list[Any]) -> None:
    weight = torch.nn.Parameter(torch.ones(2, 3))
    bias = torch.nn.Parameter(torch.ones(3))
    half = torch.nn.Parameter(torch.ones(4, dtype=torch.bfloat16))
    unused = torch.nn.Parameter(torch.ones(5))
    frozen = torch.nn.Parameter(torch.ones(1), requires_grad=False)
    weight.grad, bias.grad, half.grad = torch.full((2, 3), 4.0), torch.full((3,), 2.0), torch.full((4,), 8.0).bfloat16()
    count = collectives.all_reduce_gradients_([weight, bias, half, unused, frozen])
    assert count == 2
    assert [call[:2] for call in two_ranks] == [("all_reduce", ReduceOp.SUM)] * 2
    # Pre-scaled by 1/2, then summed with an equal peer: the mean is the local gradient.
    assert weight.grad.eq(4.0).all() and bias.grad.eq(2.0).all() and half.grad.eq(8.0).all()
    assert unused.grad is not None and unused.grad.eq(0).all()
    assert frozen.grad is None


def test_module_states_broadcast_casts_int64(two_ranks: list[Any]) -> None:
    module = torch.nn.BatchNorm1d(3)  # float parameters and buffers, and an int64 ``num_batches_tracked``
    collectives.broadcast_module_states_(module)
    assert sorted(str(call[2]) for call in two_ranks) == ["torch.float32", "torch.int32"]
    assert module.num_batches_tracked.dtype == torch.int64


# --- collectives on a real one-process "hccl" group of the stand-in --------------------------------------


@pytest.fixture
def hccl_group(standin: Any, tmp_path: Any) -> Iterator[None]:
    register_hccl_standin_backend()
    store = dist.FileStore(str(tmp_path / "store"), 1)
    dist.init_process_group("hccl", store=store, rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def test_object_broadcast_and_int_reduce_on_the_standin_group(hccl_group: None) -> None:
    payload = {"step": 3, "names": ["a", "b"]}
    assert collectives.broadcast_object(payload) == payload
    assert collectives.all_reduce(torch.tensor([4, 7]), reduce_op="mean").tolist() == [4, 7]
    gathered = collectives.all_gather(torch.tensor([1, 2]))
    assert gathered.dtype == torch.int64 and gathered.tolist() == [[1, 2]]
    with pytest.raises(RuntimeError, match="Unsupported ReduceOp for HCCL"):
        dist.all_reduce(torch.ones(1), op=ReduceOp.AVG)  # what the helpers above avoid


# --- the strategy through the Trainer and Fabric -----------------------------------------------------------


@pytest.fixture
def two_standin_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIGHTNING_HPU_CPU_DEVICES", "2")
    get_backend()


@pytest.mark.parametrize("strategy", ["auto", "ddp", "ddp_spawn", "hpu_parallel", "hpu_ddp"])
def test_several_hpus_get_the_parallel_strategy(two_standin_devices: None, strategy: str) -> None:
    trainer = _trainer(accelerator="hpu", devices=2, strategy=strategy)
    assert type(trainer.strategy) is HPUParallelStrategy
    assert not trainer.strategy.fast_ddp
    assert trainer.strategy.num_processes == 2


def test_two_nodes_get_the_parallel_strategy() -> None:
    trainer = _trainer(accelerator="hpu", devices=1, num_nodes=2)
    assert isinstance(trainer.strategy, HPUParallelStrategy)
    assert trainer.strategy.num_nodes == 2


def test_fast_ddp_by_name(two_standin_devices: None) -> None:
    trainer = _trainer(accelerator="hpu", devices=2, strategy="hpu_fast_ddp")
    assert isinstance(trainer.strategy, HPUParallelStrategy) and trainer.strategy.fast_ddp


def test_ddp_knobs_reach_distributed_data_parallel() -> None:
    strategy = HPUParallelStrategy(bucket_cap_mb=100, gradient_as_bucket_view=True, static_graph=True)
    assert strategy._ddp_kwargs == {"bucket_cap_mb": 100, "gradient_as_bucket_view": True, "static_graph": True}
    assert strategy.determine_ddp_device_ids() is None


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [({"bucket_cap_mb": 100}, "bucket_cap_mb"), ({"ddp_comm_hook": lambda state, bucket: None}, "ddp_comm_hook")],
)
def test_fast_ddp_refuses_wrapper_options(kwargs: dict[str, Any], named: str) -> None:
    with pytest.raises(ValueError, match=f"fast_ddp=True.*{named}"):
        HPUParallelStrategy(fast_ddp=True, **kwargs)


@pytest.mark.parametrize("strategy", ["hpu_parallel", "hpu_ddp", "ddp"])
def test_fabric_several_hpus_get_the_parallel_strategy(two_standin_devices: None, strategy: str) -> None:
    fabric = Fabric(accelerator="hpu", devices=2, strategy=strategy)
    assert type(fabric.strategy) is FabricHPUParallelStrategy


@pytest.mark.parametrize("strategy_cls", [HPUParallelStrategy, FabricHPUParallelStrategy])
def test_start_methods_that_work_on_hpu_are_accepted_and_the_others_refused(strategy_cls: type) -> None:
    for start_method in ("popen", "spawn"):
        assert strategy_cls(start_method=start_method)._start_method == start_method
    for start_method in ("fork", "forkserver"):
        with pytest.raises(ValueError, match=rf"start_method='{start_method}'\) forks the launching process"):
            strategy_cls(start_method=start_method)
    with pytest.raises(ValueError, match=r"start_method='threads'\) is not one of Lightning's start methods"):
        strategy_cls(start_method="threads")
