"""Asynchronous collectives of the stand-in's ``"hccl"`` group whose caller drops its tensors at once, between
blocking ones, for ``rounds`` rounds (``python async_collectives_scenario.py ROUNDS``); prints ``ok`` at the end.

The group must keep a dropped tensor's memory alive until gloo is done with it, and must not hold the GIL while it
queues work for gloo (a gloo thread freeing a Python tensor needs it). A group that failed either crashed this
(freed memory written to) or hung it within a few thousand rounds;
``tests/gaudi_standin/distributed/test_process_group.py``
runs it.
"""

from __future__ import annotations

import sys
from datetime import timedelta

import torch
import torch.distributed as dist

import lightning_hpu  # noqa: F401  (the stand-in's hpu device)
from gaudi_standin.distributed.process_group import HCCLStandInProcessGroup


def _dropped_at_once(group: HCCLStandInProcessGroup) -> list[dist.Work]:
    """Collectives started on tensors that nobody holds once they are started."""
    return [
        group.all_gather_single(torch.empty(64, device="hpu"), torch.ones(64, device="hpu")),
        group.all_to_all_single(torch.empty(64, device="hpu"), torch.ones(64, device="hpu"), [], []),
        group.broadcast([torch.ones(64, device="hpu")], dist.BroadcastOptions()),
    ]


def main(rounds: int) -> None:
    group = HCCLStandInProcessGroup(dist.HashStore(), 0, 1, timedelta(seconds=30))
    for round in range(rounds):
        pending = _dropped_at_once(group)
        gathered = torch.empty(64, device="hpu")
        group.all_gather_single(gathered, torch.full((64,), float(round), device="hpu")).wait()
        assert torch.equal(gathered.cpu(), torch.full((64,), float(round))), f"round {round}: {gathered.cpu()}"
        for work in pending:
            work.wait()
    print("ok")


if __name__ == "__main__":
    main(int(sys.argv[1]))
