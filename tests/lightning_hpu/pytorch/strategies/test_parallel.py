"""HPUParallelStrategy and the HCCL-safe collectives, in one process (a simulated second rank where needed)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest
import torch
import torch.distributed as dist
from lightning.fabric import Fabric
from lightning.pytorch import Trainer
from torch.distributed import ReduceOp

from gaudi_standin.distributed.process_group import register_hccl_standin_backend
from lightning_hpu import HPUParallelStrategy
from lightning_hpu.distributed import collectives, flat_gradients
from lightning_hpu.distributed.collectives import hccl_reduce_op
from lightning_hpu.distributed.flat_gradients import FlatGradients, all_reduce_gradients_
from lightning_hpu.fabric.strategies import HPUParallelStrategy as FabricHPUParallelStrategy
from lightning_hpu.runtime import get_backend
from tests.helpers.paths import BENCHMARKS
from tests.helpers.standin import reset_backend

sys.path.insert(0, str(BENCHMARKS))
from step_counters import TensorAllocations

from tests.helpers.trainer import quiet_trainer


def _trainer(**kwargs: Any) -> Trainer:
    return quiet_trainer(**kwargs)


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
    ],
)
def test_reduce_ops_become_ops_hccl_runs(reduce_op: Any, expected: tuple[Any, bool]) -> None:
    assert hccl_reduce_op(reduce_op) == expected


@pytest.mark.parametrize("reduce_op", ["median", ReduceOp.BAND, ReduceOp.BXOR])
def test_reduce_ops_hccl_lacks_are_refused_before_any_collective(reduce_op: Any) -> None:
    with pytest.raises(ValueError, match="reduce_op="):
        collectives.all_reduce(torch.ones(2), reduce_op=reduce_op)


@pytest.mark.parametrize("reduce_op", ["product", "PROD", ReduceOp.PRODUCT, ReduceOp(ReduceOp.PRODUCT)])
def test_product_is_refused_with_what_to_do_instead(reduce_op: Any, two_ranks: list[Any]) -> None:
    # lightning-habana's first sentence and exception type (TypeError), then what to do; also a ValueError.
    pattern = r"^Unsupported ReduceOp \S+\. Supported ops in HCCL are: sum, min, max\. reduce_op=.*: HCCL cannot"
    for error in (ValueError, TypeError):
        with pytest.raises(error, match=pattern + r" multiply .* reduce on the host, or all-reduce"):
            collectives.all_reduce(torch.ones(2), reduce_op=reduce_op)
    assert two_ranks == []


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


@pytest.fixture(params=["lazy GAUDI2", "eager GAUDI", "eager GAUDI2"])
def device_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The stand-in in lazy mode, or eager on Gaudi 1 or Gaudi2: only the last holds int64 as int64."""
    mode, generation = request.param.split()
    monkeypatch.setenv("PT_HPU_LAZY_MODE", "1" if mode == "lazy" else "0")
    monkeypatch.setenv("LIGHTNING_HPU_CPU_DEVICE_NAME", generation)
    reset_backend()
    return str(request.param)


def test_int64_travels_as_the_device_holds_it_and_comes_back(device_mode: str, two_ranks: list[Any]) -> None:
    tensor = torch.tensor([3, 5])
    collectives.all_reduce(tensor, reduce_op="sum")
    assert tensor.dtype == torch.int64 and tensor.tolist() == [6, 10]
    collectives.all_reduce(tensor, reduce_op=ReduceOp.AVG)
    assert tensor.tolist() == [6, 10]
    wire = torch.int64 if device_mode == "eager GAUDI2" else torch.int32
    assert {call[2] for call in two_ranks} == {wire}


@pytest.mark.parametrize("value", [2**40, -(2**31) - 1, 2**31])
def test_int64_beyond_int32_is_refused_where_the_device_holds_int32(
    device_mode: str, two_ranks: list[Any], value: int
) -> None:
    tensor = torch.tensor([1, value])
    if device_mode == "eager GAUDI2":
        collectives.all_reduce(tensor, reduce_op="max")
        assert tensor.tolist() == [1, value]  # int64 as it is: kept exact
        assert two_ranks == [("all_reduce", ReduceOp.MAX, torch.int64)]
        return
    mode = "lazy mode" if device_mode.startswith("lazy") else "eager mode on GAUDI"
    refusal = rf"^An int64 tensor holding {value} cannot go through a collective in {mode},.*into two int32 halves"
    for call in (
        lambda: collectives.all_reduce(tensor, reduce_op="sum"),
        lambda: collectives.broadcast_tensors_([tensor]),
    ):
        with pytest.raises(ValueError, match=refusal):
            call()
    assert two_ranks == []  # refused before anything was sent
    assert tensor.tolist() == [1, value]
    edge = torch.tensor([-(2**31), 2**31 - 1])
    collectives.all_reduce(edge, reduce_op="max")  # the int32 range itself travels
    assert edge.tolist() == [-(2**31), 2**31 - 1]


@pytest.fixture
def two_ranks_flat(two_ranks: list[Any], monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    monkeypatch.setattr(flat_gradients, "_distributed_is_initialized", lambda: True)
    return two_ranks


def test_fast_ddp_reduces_each_dtype_once_pre_scaled(two_ranks_flat: list[Any]) -> None:
    weight = torch.nn.Parameter(torch.ones(2, 3))
    bias = torch.nn.Parameter(torch.ones(3))
    half = torch.nn.Parameter(torch.ones(4, dtype=torch.bfloat16))
    unused = torch.nn.Parameter(torch.ones(5))
    frozen = torch.nn.Parameter(torch.ones(1), requires_grad=False)
    weight.grad, bias.grad, half.grad = torch.full((2, 3), 4.0), torch.full((3,), 2.0), torch.full((4,), 8.0).bfloat16()
    gradients = FlatGradients([weight, bias, half, unused, frozen])
    count = all_reduce_gradients_(gradients)
    assert count == 2
    assert [call[:2] for call in two_ranks_flat] == [("all_reduce", ReduceOp.SUM)] * 2
    # Pre-scaled by 1/2, then summed with an equal peer: the mean is the local gradient.
    assert weight.grad.eq(4.0).all() and bias.grad.eq(2.0).all() and half.grad.eq(8.0).all()
    assert unused.grad is not None and unused.grad.eq(0).all()
    assert frozen.grad is None


def _in(buffer: torch.Tensor, tensor: torch.Tensor) -> bool:
    start = buffer.data_ptr()
    return start <= tensor.data_ptr() < start + buffer.numel() * buffer.element_size()


@pytest.mark.parametrize("parameter_count", [2, 300], ids=["few-large", "many-small"])
def test_fast_ddp_buffers_persist_gradients_are_views_and_a_step_allocates_nothing(
    two_ranks_flat: list[Any], parameter_count: int
) -> None:
    size = 2**17 if parameter_count == 2 else 8
    parameters = [torch.nn.Parameter(torch.zeros(size)) for _ in range(parameter_count)]
    gradients = FlatGradients(parameters)
    (bucket,) = gradients.buckets
    buffer = bucket.flat.data_ptr()
    for step in range(1, 4):
        if step == 2:  # ``zero_grad(set_to_none=False)``: the gradients stay slices of the buffer
            for parameter in parameters:
                parameter.grad.fill_(1.0)  # type: ignore[union-attr]
        else:  # ``zero_grad()``: autograd gives fresh gradients
            for index, parameter in enumerate(parameters):
                parameter.grad = torch.full((size,), float(index + step))
        with TensorAllocations() as allocations:
            all_reduce_gradients_(gradients)
        assert allocations.total == 0, allocations.ops
        assert bucket.flat.data_ptr() == buffer, "the flat buffer is allocated once"
        assert all(_in(bucket.flat, parameter.grad) for parameter in parameters)  # type: ignore[arg-type]
        expected = [1.0] * parameter_count if step == 2 else [float(index + step) for index in range(parameter_count)]
        assert [parameter.grad[0].item() for parameter in parameters] == expected  # type: ignore[index]


def test_fast_ddp_reduce_dtype_sends_bf16_and_casts_back(two_ranks_flat: list[Any]) -> None:
    weight = torch.nn.Parameter(torch.zeros(3))
    weight.grad = torch.tensor([1.0, 0.5, 3.0])
    gradients = FlatGradients([weight], reduce_dtype=torch.bfloat16)
    with TensorAllocations() as allocations:
        all_reduce_gradients_(gradients)
    assert allocations.total == 0, allocations.ops
    assert two_ranks_flat == [("all_reduce", ReduceOp.SUM, torch.bfloat16)]
    assert weight.grad.dtype == torch.float32 and weight.grad.tolist() == [1.0, 0.5, 3.0]


def test_module_states_broadcast_casts_int64_in_lazy_mode(lazy_standin: Any, two_ranks: list[Any]) -> None:
    module = torch.nn.BatchNorm1d(3)  # float parameters and buffers, and an int64 ``num_batches_tracked``
    collectives.broadcast_module_states_(module)
    assert sorted(str(call[2]) for call in two_ranks) == ["torch.float32", "torch.int32"]
    assert module.num_batches_tracked.dtype == torch.int64


# --- collectives on a real one-process "hccl" group of the stand-in --------------------------------------


@pytest.fixture
def hccl_group(standin: Any, tmp_path: Any) -> Iterator[None]:
    register_hccl_standin_backend()
    store = dist.FileStore(str(tmp_path / "store"), 1)
    if dist.is_initialized():  # an in-process run of an earlier test left its group
        dist.destroy_process_group()
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
    strategy = HPUParallelStrategy(bucket_cap_mb=100, gradient_as_bucket_view=False, static_graph=True)
    assert strategy._ddp_kwargs == {"bucket_cap_mb": 100, "gradient_as_bucket_view": False, "static_graph": True}
    assert strategy.determine_ddp_device_ids() is None


@pytest.mark.parametrize("strategy_cls", [HPUParallelStrategy, FabricHPUParallelStrategy])
def test_ddp_gets_gaudi_defaults_unless_given(strategy_cls: type) -> None:
    assert strategy_cls()._ddp_kwargs == {"bucket_cap_mb": 230, "gradient_as_bucket_view": True}
    assert strategy_cls(bucket_cap_mb=50)._ddp_kwargs == {"bucket_cap_mb": 50, "gradient_as_bucket_view": True}
    given = strategy_cls(gradient_as_bucket_view=False)._ddp_kwargs
    assert given == {"bucket_cap_mb": 230, "gradient_as_bucket_view": False}


def test_fast_ddp_takes_no_ddp_defaults_and_checks_reduce_dtype() -> None:
    assert HPUParallelStrategy(fast_ddp=True)._ddp_kwargs == {}
    assert HPUParallelStrategy(fast_ddp=True, reduce_dtype=torch.bfloat16).reduce_dtype == torch.bfloat16
    with pytest.raises(ValueError, match=r"reduce_dtype=.*fast_ddp=True"):
        HPUParallelStrategy(reduce_dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"reduce_dtype=torch.float16"):
        HPUParallelStrategy(fast_ddp=True, reduce_dtype=torch.float16)


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


@pytest.mark.parametrize("strategy", ["hpu_ddp", "hpu_fsdp", "deepspeed"])
def test_the_process_group_backend_is_known_before_setup(strategy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIGHTNING_HPU_CPU_DEVICES", "2")
    reset_backend()
    fabric = Fabric(accelerator="hpu", devices=2, strategy=strategy)
    trainer = Trainer(accelerator="hpu", devices=2, strategy=strategy, logger=False)
    assert fabric.strategy.process_group_backend == "hccl"  # type: ignore[attr-defined]
    assert trainer.strategy.process_group_backend == "hccl"  # type: ignore[attr-defined]
    assert HPUParallelStrategy(process_group_backend="gloo").process_group_backend == "gloo"
