"""The stand-in ``"hccl"`` process group across two processes over ``init_process_group("hccl")``: each collective
and each refusal as two ranks see it (the one-process tests are in ``test_process_group.py``)."""

from __future__ import annotations

import json
import multiprocessing
import multiprocessing.spawn
import os
import traceback
import warnings
from collections.abc import Callable
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.distributed import ReduceOp

from gaudi_standin.distributed.process_group import (
    CAPTURE_REFUSED_MESSAGE,
    HCCL_REFUSED_MESSAGE,
    HCCLStandInProcessGroup,
    register_hccl_standin_backend,
)
from gaudi_standin.graphs.standin_graph import StandInGraph, standin_capture
from tests.gaudi_standin.distributed.test_process_group import ACCEPTED_OPS
from tests.helpers.processes import free_port


def _refusal(fn: Callable[[], Any]) -> str:
    """``"refused"`` if ``fn`` raised HCCL's error, else what happened instead."""
    try:
        fn()
    except RuntimeError as err:
        return "refused" if HCCL_REFUSED_MESSAGE in str(err) else f"other RuntimeError: {err}"
    return "not refused"


def _checks(rank: int, world_size: int) -> dict[str, Any]:
    """Run on every rank, symmetric collectives only (so a failed check cannot hang the other rank)."""
    results: dict[str, Any] = {}
    base = torch.tensor([rank + 1.0, rank + 2.0])  # rank 0: [1, 2], rank 1: [2, 3]

    results["backend"] = dist.get_backend()
    for op in ACCEPTED_OPS:
        t = base.clone()
        dist.all_reduce(t, op=op)
        results[f"all_reduce {op}"] = t.tolist()

    # Refused before anything is sent: the tensor stays as it was and the group stays usable.
    t = base.clone()
    results["all_reduce AVG"] = _refusal(lambda: dist.all_reduce(t, op=ReduceOp.AVG))
    results["all_reduce AVG left tensor"] = t.tolist()
    results["all_reduce PREMUL_SUM"] = _refusal(lambda: dist.all_reduce(t, op=dist._make_nccl_premul_sum(0.5)))
    results["all_reduce PRODUCT"] = _refusal(lambda: dist.all_reduce(t, op=ReduceOp.PRODUCT))
    # Integers are summed in fp32: 2**24 + 1 on each rank arrives as 2**24.
    big = torch.tensor([2**24 + 1], dtype=torch.int32)
    dist.all_reduce(big)
    results["all_reduce int32 beyond fp32"] = [big.item(), str(big.dtype)]
    # No collective inside an HPU graph capture, on the path dist.all_reduce takes either.
    try:
        with standin_capture(StandInGraph()):
            dist.all_reduce(base * 2)
        results["all_reduce in capture"] = "not refused"
    except RuntimeError as err:
        results["all_reduce in capture"] = str(err)
    ints = torch.tensor([rank + 1, 6])
    for name in ("BAND", "BOR", "BXOR"):
        results[f"all_reduce {name}"] = _refusal(partial(dist.all_reduce, ints, op=getattr(ReduceOp, name)))
    results["reduce AVG"] = _refusal(lambda: dist.reduce(t, dst=0, op=ReduceOp.AVG))
    out = torch.empty(1)
    results["reduce_scatter AVG"] = _refusal(
        lambda: dist.reduce_scatter(out, list(base.chunk(world_size)), op=ReduceOp.AVG)
    )
    results["reduce_scatter_tensor AVG"] = _refusal(lambda: dist.reduce_scatter_tensor(out, base, op=ReduceOp.AVG))
    # Functional collectives call the group from C++: the refusal must hold on that path too.
    import torch.distributed._functional_collectives as funcol

    world = dist.group.WORLD
    assert world is not None

    results["funcol all_reduce avg"] = _refusal(lambda: funcol.all_reduce(base, "avg", world).wait())
    results["funcol all_reduce sum"] = funcol.all_reduce(base, "sum", world).wait().tolist()

    # Everything else is plain delegation to gloo.
    t = base.clone()
    dist.broadcast(t, src=1)
    results["broadcast"] = t.tolist()
    gathered = [torch.empty(2) for _ in range(world_size)]
    dist.all_gather(gathered, base)
    results["all_gather"] = [g.tolist() for g in gathered]
    flat = torch.empty(2 * world_size)
    dist.all_gather_into_tensor(flat, base)
    results["all_gather_into_tensor"] = flat.tolist()
    out = torch.empty(1)
    dist.reduce_scatter_tensor(out, base, op=ReduceOp.SUM)
    results["reduce_scatter_tensor SUM"] = out.tolist()
    t = base.clone()
    dist.reduce(t, dst=0, op=ReduceOp.MAX)
    results["reduce MAX"] = t.tolist() if rank == 0 else None
    objects: list[Any] = [{"from": rank}, "x"]
    dist.broadcast_object_list(objects, src=0)
    results["broadcast_object_list"] = objects
    everyone: list[Any] = [None] * world_size
    dist.all_gather_object(everyone, {"rank": rank})
    results["all_gather_object"] = everyone
    a2a = torch.empty(2)
    dist.all_to_all_single(a2a, base)
    results["all_to_all_single"] = a2a.tolist()
    dist.barrier()

    sub = dist.new_group([0, 1])
    assert sub is not None
    results["subgroup type"] = type(sub).__name__
    t = base.clone()
    dist.all_reduce(t, group=sub)
    results["subgroup all_reduce SUM"] = t.tolist()
    results["subgroup all_reduce AVG"] = _refusal(lambda: dist.all_reduce(t, op=ReduceOp.AVG, group=sub))

    # DDP: its C++ reducer all-reduces the buckets with SUM and divides by the world size.
    calls: list[str] = []
    original = HCCLStandInProcessGroup.allreduce

    def counting_allreduce(self: HCCLStandInProcessGroup, *args: Any, **kwargs: Any) -> dist.Work:
        calls.append("allreduce")
        return original(self, *args, **kwargs)

    setattr(HCCLStandInProcessGroup, "allreduce", counting_allreduce)  # noqa: B010
    try:
        torch.manual_seed(0)
        model = torch.nn.Linear(3, 2)
        ddp = torch.nn.parallel.DistributedDataParallel(model)
        inputs = [torch.arange(6.0).reshape(2, 3) * (r + 1) for r in range(world_size)]
        ddp(inputs[rank]).pow(2).sum().backward()
    finally:
        setattr(HCCLStandInProcessGroup, "allreduce", original)  # noqa: B010
    results["ddp allreduce calls"] = len(calls)
    reference = torch.nn.Linear(3, 2)
    reference.load_state_dict(model.state_dict())
    for x in inputs:
        (reference(x).pow(2).sum() / world_size).backward()
    results["ddp grads match"] = all(
        p.grad is not None and r.grad is not None and torch.allclose(p.grad, r.grad)
        for p, r in zip(model.parameters(), reference.parameters(), strict=True)
    )
    return results


def _worker(rank: int, world_size: int, port: int, out_dir: str) -> None:
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)  # two workers share the machine's cores
    try:
        register_hccl_standin_backend()
        dist.init_process_group("hccl", rank=rank, world_size=world_size, timeout=timedelta(seconds=60))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # all_gather_into_tensor & co. are deprecated in 2.13
            results = _checks(rank, world_size)
        dist.destroy_process_group()
    except Exception:
        results = {"error": traceback.format_exc()}
    Path(out_dir, f"rank{rank}.json").write_text(json.dumps(results, default=str))


@pytest.mark.multiprocess
def test_two_processes_over_hccl_standin(tmp_path: Path, python_executable: str) -> None:
    world_size = 2
    # Spawned, not forked: forking a process whose torch threads hold locks can deadlock the child. The spawned
    # processes start in the tests' preloaded interpreter.
    spawn = multiprocessing.get_context("spawn")
    real_executable = multiprocessing.spawn.get_executable()
    spawn.set_executable(python_executable)
    try:
        mp.start_processes(
            _worker, args=(world_size, free_port(), str(tmp_path)), nprocs=world_size, join=True, start_method="spawn"
        )
    finally:
        spawn.set_executable(real_executable)
    results = [json.loads((tmp_path / f"rank{rank}.json").read_text()) for rank in range(world_size)]
    for rank, res in enumerate(results):
        assert "error" not in res, f"rank {rank} failed:\n{res['error']}"

        assert res["backend"] == "hccl"
        assert res[f"all_reduce {ReduceOp.SUM}"] == [3.0, 5.0]
        assert res[f"all_reduce {ReduceOp.MAX}"] == [2.0, 3.0]
        assert res[f"all_reduce {ReduceOp.MIN}"] == [1.0, 2.0]
        assert res["all_reduce int32 beyond fp32"] == [2**25, "torch.int32"]  # exactly: 2**25 + 2
        assert res["all_reduce in capture"].startswith(CAPTURE_REFUSED_MESSAGE)

        refusals = {
            key: value
            for key, value in res.items()
            if key.endswith(("AVG", "PRODUCT", "PREMUL_SUM", "BAND", "BOR", "BXOR", " avg"))
        }
        assert len(refusals) == 11
        assert all(value == "refused" for value in refusals.values()), refusals
        assert res["all_reduce AVG left tensor"] == [rank + 1.0, rank + 2.0]
        assert res["funcol all_reduce sum"] == [3.0, 5.0]

        assert res["broadcast"] == [2.0, 3.0]
        assert res["all_gather"] == [[1.0, 2.0], [2.0, 3.0]]
        assert res["all_gather_into_tensor"] == [1.0, 2.0, 2.0, 3.0]
        assert res["reduce_scatter_tensor SUM"] == [[3.0], [5.0]][rank]
        assert res["reduce MAX"] == ([2.0, 3.0] if rank == 0 else None)
        assert res["broadcast_object_list"] == [{"from": 0}, "x"]
        assert res["all_gather_object"] == [{"rank": 0}, {"rank": 1}]
        assert res["all_to_all_single"] == [[1.0, 2.0], [2.0, 3.0]][rank]  # element ``rank`` of each rank's input

        assert res["subgroup type"] == "HCCLStandInProcessGroup"
        assert res["subgroup all_reduce SUM"] == [3.0, 5.0]

        assert res["ddp allreduce calls"] >= 1, "DDP's reducer did not go through the stand-in group"
        assert res["ddp grads match"] is True
