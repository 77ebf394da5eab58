"""The stand-in ``"hccl"`` process group: gloo underneath, HCCL's refusals of reduce ops on top."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
import torch
import torch.distributed as dist
from torch.distributed import ReduceOp

from gaudi_standin.distributed import process_group as cpu_process_group
from gaudi_standin.distributed.process_group import (
    CAPTURE_REFUSED_MESSAGE,
    DTYPE_REFUSED_MESSAGE,
    HCCL_REFUSED_MESSAGE,
    RECV_ANYSOURCE_MESSAGE,
    HCCLStandInProcessGroup,
    check_hccl_reduce_op,
    register_hccl_standin_backend,
)
from gaudi_standin.graphs.standin_graph import StandInGraph, capture_active, standin_capture
from tests.helpers.dynamo import reset_dynamo
from tests.helpers.processes import run_until_ok

ACCEPTED_OPS = [ReduceOp.SUM, ReduceOp.MIN, ReduceOp.MAX]
REFUSED_OPS = {
    "AVG": lambda: ReduceOp.AVG,
    "PRODUCT": lambda: ReduceOp.PRODUCT,
    "PREMUL_SUM": lambda: dist._make_nccl_premul_sum(2.0),
    "BAND": lambda: ReduceOp.BAND,
    "BOR": lambda: ReduceOp.BOR,
    "BXOR": lambda: ReduceOp.BXOR,
}


# --- one process, the group built directly (no global state) ---------------------------------------


@pytest.fixture
def single_pg() -> HCCLStandInProcessGroup:
    return HCCLStandInProcessGroup(dist.HashStore(), 0, 1, timedelta(seconds=30))


def _call_reduce_collective(pg: HCCLStandInProcessGroup, method: str, op: Any) -> dist.Work:
    # Integer tensors: gloo itself implements the bitwise ops on them, so only the stand-in's check refuses.
    t = torch.tensor([1, 2], dtype=torch.int64)
    out = torch.empty(2, dtype=torch.int64)
    if method == "allreduce":
        opts: Any = dist.AllreduceOptions()
        opts.reduceOp = op
        return pg.allreduce([t], opts)
    if method == "allreduce_coalesced":
        opts = dist.AllreduceCoalescedOptions()
        opts.reduceOp = op
        return pg.allreduce_coalesced([t], opts)
    if method == "reduce":
        opts = dist.ReduceOptions()
        opts.reduceOp = op
        return pg.reduce([t], opts)
    opts = dist.ReduceScatterOptions()
    opts.reduceOp = op
    if method == "reduce_scatter":
        return pg.reduce_scatter([out], [[t]], opts)
    if method == "reduce_scatter_single":
        return pg.reduce_scatter_single(out, t, opts)
    if method == "_reduce_scatter_base":  # older name, bound separately in C++
        return pg._reduce_scatter_base(out, t, opts)
    if method == "reduce_scatter_single_coalesced":
        return pg.reduce_scatter_single_coalesced([out], [t], opts)
    if method == "reduce_scatter_tensor_coalesced":  # older name, reaches the override through C++
        return dist.ProcessGroup.reduce_scatter_tensor_coalesced(pg, [out], [t], opts)
    raise AssertionError(method)


REDUCE_METHODS = [
    "allreduce",
    "allreduce_coalesced",
    "reduce",
    "reduce_scatter",
    "reduce_scatter_single",
    "_reduce_scatter_base",
    "reduce_scatter_single_coalesced",
    "reduce_scatter_tensor_coalesced",
]


#: What each refusal must advise instead of the op.
ADVICE = {
    "AVG": "ReduceOp.SUM and divide by the world size",
    "PRODUCT": "reduce on the host, or all-reduce the logarithms",
    "PREMUL_SUM": "multiply the tensor by the factor",
    "BAND": "ReduceOp.MIN",
    "BOR": "ReduceOp.MAX",
    "BXOR": "modulo 2",
}


@pytest.mark.parametrize("method", REDUCE_METHODS)
@pytest.mark.parametrize("op_name", sorted(REFUSED_OPS))
def test_refused_ops_raise_hccl_error(single_pg: HCCLStandInProcessGroup, method: str, op_name: str) -> None:
    with pytest.raises(RuntimeError, match=f"^{HCCL_REFUSED_MESSAGE}: ReduceOp.{op_name} cannot run on HCCL;") as err:
        _call_reduce_collective(single_pg, method, REFUSED_OPS[op_name]())
    assert ADVICE[op_name] in str(err.value)


@pytest.mark.parametrize("method", REDUCE_METHODS)
@pytest.mark.parametrize("op", ACCEPTED_OPS, ids=lambda op: str(op).rsplit(".", 1)[-1])
def test_accepted_ops_are_delegated(single_pg: HCCLStandInProcessGroup, method: str, op: Any) -> None:
    assert _call_reduce_collective(single_pg, method, op).wait()


def test_coalesced_reduce_scatter_through_torch_is_checked() -> None:
    """What FSDP does, ``reduce_scatter_tensor`` calls under ``_coalescing_manager``, meets HCCL's check on every
    torch (2.9 calls ``reduce_scatter_tensor_coalesced`` on the group, 2.13 ``reduce_scatter_single_coalesced``)."""
    if dist.is_initialized():  # an in-process run of an earlier test left its group
        dist.destroy_process_group()
    register_hccl_standin_backend()
    dist.init_process_group("hccl", store=dist.HashStore(), rank=0, world_size=1)
    try:
        out, t = torch.empty(2), torch.ones(2)
        refused = pytest.raises(RuntimeError, match=f"^{HCCL_REFUSED_MESSAGE}: ReduceOp.AVG")
        with refused, dist._coalescing_manager(async_ops=False):
            dist.reduce_scatter_tensor(out, t, op=ReduceOp.AVG)
        with dist._coalescing_manager(async_ops=False):
            dist.reduce_scatter_tensor(out, t * 3, op=ReduceOp.SUM)
        assert out.tolist() == [3.0, 3.0]
    finally:
        dist.destroy_process_group()


def test_convenience_overloads_are_checked_too(single_pg: HCCLStandInProcessGroup) -> None:
    """``ProcessGroup``'s bindings also take ``(tensor, op, timeout)``-style arguments; so does the stand-in."""
    t = torch.tensor([3.0])
    out = torch.empty(1)
    single_pg.allreduce([t]).wait()  # default options: SUM
    single_pg.allreduce(t, ReduceOp.MAX, timedelta(seconds=5)).wait()
    single_pg.allreduce([t], op=ReduceOp.MIN).wait()
    single_pg.reduce(t, 0, ReduceOp.MIN).wait()
    single_pg.reduce_scatter(out, [t], ReduceOp.SUM).wait()
    assert t.tolist() == [3.0]
    assert out.tolist() == [3.0]
    refused: list[Callable[[], Any]] = [
        lambda: single_pg.allreduce([t], ReduceOp.AVG),
        lambda: single_pg.allreduce(t, ReduceOp.AVG),
        lambda: single_pg.allreduce([t], op=ReduceOp.BOR),
        lambda: single_pg.allreduce(t, ReduceOp.PRODUCT),
        lambda: single_pg.reduce(t, 0, ReduceOp.PRODUCT),
        lambda: single_pg.reduce(t, 0, ReduceOp.AVG),
        lambda: single_pg.reduce(t, 0, op=ReduceOp.BXOR),
        lambda: single_pg.reduce_scatter(out, [t], ReduceOp.AVG),
        lambda: single_pg.reduce_scatter([out], [[t]], op=ReduceOp.BAND),
    ]
    for call in refused:
        with pytest.raises(RuntimeError, match=HCCL_REFUSED_MESSAGE):
            call()


def test_check_hccl_reduce_op() -> None:
    for op in ACCEPTED_OPS:
        check_hccl_reduce_op(op)
        check_hccl_reduce_op(ReduceOp(op))
    for make_op in REFUSED_OPS.values():
        with pytest.raises(RuntimeError, match=HCCL_REFUSED_MESSAGE):
            check_hccl_reduce_op(make_op())


# --- dtypes, captures, recv from any source ----------------------------------------------------------

BEYOND_FP32 = 2**24 + 1  # the first integer fp32 cannot hold: it rounds to 2**24


@pytest.mark.parametrize("method", ["allreduce", "allreduce_coalesced", "reduce"])
@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.uint8, torch.float64, torch.float16])
def test_reductions_compute_non_bf16_fp32_in_fp32(
    single_pg: HCCLStandInProcessGroup, method: str, dtype: torch.dtype
) -> None:
    value = {torch.float64: 1.0 + 2**-30, torch.float16: 1.0, torch.uint8: 200}.get(dtype, BEYOND_FP32)
    t = torch.tensor([value], dtype=dtype)
    opts: Any = {"allreduce": dist.AllreduceOptions, "reduce": dist.ReduceOptions}.get(
        method, dist.AllreduceCoalescedOptions
    )()
    getattr(single_pg, method)([t], opts).wait()
    assert t.dtype == dtype
    assert t.tolist() == torch.tensor([value], dtype=dtype).float().to(dtype).tolist()
    if dtype in (torch.int32, torch.int64):
        assert t.item() == 2**24  # fp32 rounding, as on a Gaudi
    if dtype == torch.float64:
        assert t.item() == 1.0


def test_tensor_reduce_scatter_keeps_integers_and_rounds_the_rest(single_pg: HCCLStandInProcessGroup) -> None:
    ints = torch.tensor([BEYOND_FP32], dtype=torch.int32)
    out = torch.empty(1, dtype=torch.int32)
    single_pg.reduce_scatter_single(out, ints).wait()
    assert out.item() == BEYOND_FP32  # int32 and int64 are reduce-scattered as they are
    doubles = torch.tensor([1.0 + 2**-30], dtype=torch.float64)
    out64 = torch.empty(1, dtype=torch.float64)
    single_pg.reduce_scatter_single(out64, doubles).wait()
    assert out64.item() == 1.0


def test_complex_tensors_are_refused_except_by_broadcast(single_pg: HCCLStandInProcessGroup) -> None:
    z = torch.tensor([1 + 2j])
    refused: list[Callable[[], Any]] = [
        lambda: single_pg.allreduce([z]),
        lambda: single_pg.reduce(z, 0, ReduceOp.SUM),
        lambda: single_pg.allgather([[torch.empty_like(z)]], [z]),
        lambda: single_pg._allgather_base(torch.empty_like(z), z),
        lambda: single_pg.reduce_scatter_single(torch.empty_like(z), z),
    ]
    for call in refused:
        with pytest.raises(RuntimeError, match=f"^{DTYPE_REFUSED_MESSAGE}: torch.complex64 in .*view_as_real"):
            call()
    single_pg.broadcast([z]).wait()  # the bridge broadcasts bytes
    assert z.tolist() == [1 + 2j]


def test_recv_from_any_source_throws(single_pg: HCCLStandInProcessGroup) -> None:
    with pytest.raises(RuntimeError, match=f"^{RECV_ANYSOURCE_MESSAGE} from any source: name the sending rank"):
        single_pg.recv_anysource([torch.zeros(1)], 0)


@pytest.mark.parametrize(
    "collective",
    [
        lambda pg, t: pg.allreduce([t]),
        lambda pg, t: pg.reduce(t, 0, ReduceOp.SUM),
        lambda pg, t: pg.broadcast([t]),
        lambda pg, t: pg.allgather([[torch.empty_like(t)]], [t]),
        lambda pg, t: pg.reduce_scatter_single(torch.empty_like(t), t),
        lambda pg, t: pg.barrier(),
    ],
    ids=["allreduce", "reduce", "broadcast", "allgather", "reduce_scatter", "barrier"],
)
def test_collectives_are_refused_during_a_graph_capture(
    single_pg: HCCLStandInProcessGroup, collective: Callable[..., Any]
) -> None:
    t = torch.ones(2)
    graph = StandInGraph()
    refusal = f"^{CAPTURE_REFUSED_MESSAGE}: .* outside the captured region"
    with pytest.raises(RuntimeError, match=refusal), standin_capture(graph):
        collective(single_pg, t * 2)
    assert not capture_active()
    collective(single_pg, t).wait()  # after the capture the group works again


def test_group_reports_hccl_and_a_cpu_backend(single_pg: HCCLStandInProcessGroup) -> None:
    assert single_pg.getBackendName() == "hccl"
    assert single_pg.name() == "hccl"
    assert set(single_pg._device_types) == {torch.device("cpu"), torch.device("hpu")}
    for device in ("cpu", "hpu"):  # gloo, handed host views of the hpu tensors
        assert isinstance(single_pg._get_backend(torch.device(device)), dist.ProcessGroupGloo)


@pytest.mark.usefixtures("standin")
def test_a_compiled_function_runs_the_groups_collectives_as_they_are(single_pg: HCCLStandInProcessGroup) -> None:
    """On a Gaudi a collective ends in the bridge's C++ group, where TorchDynamo never looks. Run eagerly from compiled
    code (FSDP's all-gather inside a compiled FSDP module), it reaches the stand-in's group the same way: not compiled
    as a frame of its own, whose tracing would hand gloo the host view of a fake tensor."""

    @torch._dynamo.disable(recursive=False)  # skipped, as torch.distributed's own files are: its callees are not
    def all_reduce_eagerly(tensor: torch.Tensor) -> None:
        single_pg.allreduce([tensor]).wait()

    def step(x: torch.Tensor) -> torch.Tensor:
        doubled = x * 2
        all_reduce_eagerly(doubled)
        return doubled + 1

    reset_dynamo()
    try:
        result = torch.compile(step, backend="hpu_backend")(torch.ones(3, device="hpu"))
    finally:
        reset_dynamo()
    assert result.device.type == "hpu" and torch.equal(result.cpu(), torch.full((3,), 3.0))


#: ``ProcessGroup`` methods that take tensors but are not collectives the stand-in's group runs.
_NOT_COLLECTIVES = {"new_window"}  # torch 2.14's symmetric-memory window (no HCCL counterpart)


def test_every_collective_torch_offers_is_a_python_method_of_the_group() -> None:
    """One left to ``ProcessGroup``'s C++ implementation runs through the device fallback, on host views that do not
    keep the memory alive, with the GIL held while gloo queues it: torch 2.13's ``all_gather_single`` (FSDP's
    all-gather) hung two ranks so, now and then."""
    collectives = {
        name
        for name in dir(dist.ProcessGroup)
        if not name.startswith("__") and "torch.Tensor" in (getattr(dist.ProcessGroup, name).__doc__ or "")
    } - _NOT_COLLECTIVES
    assert {"allreduce", "broadcast", "_allgather_base"} <= collectives  # the docstrings still name the tensors
    assert sorted(collectives - set(vars(HCCLStandInProcessGroup))) == []


def test_async_collectives_keep_the_tensors_their_caller_dropped(python_executable: str) -> None:
    """``async_collectives_scenario.py``: 2,000 rounds of asynchronous collectives whose tensors the caller drops at
    once, beside blocking ones. Through the C++ route this crashed (freed memory written to) within seconds."""
    run_until_ok(python_executable, "async_collectives_scenario.py", "2000")


@pytest.mark.parametrize("name", ["gather_single", "gather_into_tensor"])
def test_gathers_into_one_tensor_are_refused_as_by_the_bridge(single_pg: HCCLStandInProcessGroup, name: str) -> None:
    """torch 2.14's single-tensor gathers: the bridge's HCCL group does not implement them."""
    with pytest.raises(RuntimeError, match=rf"^Backend hccl does not support {name}: gather into a list instead"):
        getattr(single_pg, name)(torch.empty(2), torch.ones(2))


def test_message_is_the_bridges() -> None:
    assert HCCL_REFUSED_MESSAGE == "Unsupported ReduceOp for HCCL process group"


# --- registration -----------------------------------------------------------------------------------


@pytest.fixture
def clean_backend_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let a test register backends without leaking them into the rest of the session."""
    backend = dist.Backend
    for name in ("_plugins", "backend_capability", "backend_type_map", "default_device_backend_map"):
        monkeypatch.setattr(backend, name, dict(getattr(backend, name)))
    monkeypatch.setattr(backend, "backend_list", list(backend.backend_list))
    for name in ("_plugins", "backend_list"):
        container = getattr(backend, name)
        if isinstance(container, dict):
            container.pop("HCCL", None)
        elif "hccl" in container:
            container.remove("hccl")
    if hasattr(backend, "HCCL"):
        monkeypatch.delattr(backend, "HCCL")


@pytest.mark.usefixtures("clean_backend_registry")
def test_register_is_idempotent_and_for_hpu_and_cpu() -> None:
    register_hccl_standin_backend()
    register_hccl_standin_backend()
    backend = dist.Backend
    assert backend.backend_list.count("hccl") == 1
    assert backend._plugins["HCCL"].creator_fn is cpu_process_group._create_hccl_standin
    assert backend.backend_capability["hccl"] == ["cpu", "hpu"]
    assert backend.default_device_backend_map["cpu"] == "gloo"  # plain "gloo" users are not redirected


@pytest.mark.usefixtures("clean_backend_registry")
def test_register_leaves_an_existing_hccl_alone() -> None:
    def bridge_creator(*args: Any) -> None:
        raise AssertionError("not called")

    dist.Backend.register_backend("hccl", bridge_creator, extended_api=True, devices=["hpu"])
    register_hccl_standin_backend()
    assert dist.Backend._plugins["HCCL"].creator_fn is bridge_creator
    assert dist.Backend.backend_capability["hccl"] == ["hpu"]
