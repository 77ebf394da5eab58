"""Asynchronous ``torch.ops.c10d`` collectives called directly on ``hpu`` tensors whose caller drops them at once
(``python direct_c10d_scenario.py ROUNDS``); prints ``ok`` at the end.

Some libraries call the c10d ops themselves instead of ``torch.distributed``'s functions, with the group's boxed
form: ``torch.ops.c10d._allgather_base_(out, inp, group.boxed(), True, -1)``. On the stand-in such a call goes
through the device's fallback, which hands gloo host views of the ``hpu`` tensors. Right after the call the input is
dropped and a tensor of the same size with other values is allocated: the stand-in's allocator is the host's, which
hands a freed block to the next allocation of its size at once, so a collective that reads the dropped input's
memory late returns those values. ``tests/gaudi_standin/distributed/test_direct_c10d.py`` runs it; before the host
views kept the device memory alive, 359 of 2,000 rounds of ``_allgather_base_`` came back wrong.
"""

from __future__ import annotations

import sys
from datetime import timedelta

import habana_frameworks.torch  # noqa: F401  (the stand-in's hpu device)
import torch
import torch.distributed as dist

from gaudi_standin.distributed.process_group import HCCLStandInProcessGroup

SIZE = 64


def _expect(name: str, round: int, got: torch.Tensor, want: float) -> None:
    assert torch.equal(got.cpu(), torch.full_like(got.cpu(), want)), f"{name}, round {round}: {got.cpu()}"


def main(rounds: int) -> None:
    group = HCCLStandInProcessGroup(dist.HashStore(), 0, 1, timedelta(seconds=30)).boxed()
    total = torch.classes.c10d.ReduceOp()
    for round in range(rounds):
        gathered = torch.empty(SIZE, device="hpu")
        _, gather = torch.ops.c10d._allgather_base_(gathered, torch.full((SIZE,), float(round), device="hpu"), group)
        scattered = torch.empty(SIZE, device="hpu")
        source = torch.full((SIZE,), float(round) + 0.5, device="hpu")
        _, scatter = torch.ops.c10d._reduce_scatter_base_(scattered, source, group, total)
        del source
        reduced, reduce = torch.ops.c10d.allreduce_(
            [torch.full((SIZE,), float(round) + 0.25, device="hpu")], group, total, None
        )
        garbage = [torch.full((SIZE,), -1.0, device="hpu") for _ in range(4)]  # reuses the dropped inputs' blocks
        for work in (gather, scatter, reduce):
            work.wait()
        _expect("_allgather_base_", round, gathered, float(round))
        _expect("_reduce_scatter_base_", round, scattered, float(round) + 0.5)
        _expect("allreduce_", round, reduced[0], float(round) + 0.25)
        del garbage
    print("ok")


if __name__ == "__main__":
    main(int(sys.argv[1]))
