"""Agreeing on SIGTERM across ranks on the host: a one-step-late vote over a gloo group, no device work per step.

Lightning 2.6 agrees on SIGTERM by broadcasting an ``int64`` flag tensor from rank 0 and reading it back with
``.item()`` at the start of each training batch: on a Gaudi one HCCL broadcast and one device-to-host wait per step.
:class:`HostFlagVote` asks the same question with an asynchronous ``MAX`` all-reduce of one CPU integer over a
host-side gloo group, and reads the answer one step later, when it has long arrived. The Trainer's
:class:`~lightning_hpu.pytorch.strategies.sigterm.SigtermAgreementHooks` uses it.
"""

from __future__ import annotations

import signal
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from lightning.fabric.plugins.collectives.torch_collective import default_pg_timeout

#: Exit status of a process stopped by the agreed SIGTERM: what a shell reports for a process SIGTERM killed.
SIGTERM_EXIT_CODE = 128 + int(signal.SIGTERM)


class HostFlagVote:
    """Asks "did any rank raise its flag?" once per step over a host-side group; answers one step late.

    :meth:`vote` starts an asynchronous ``MAX`` all-reduce of this rank's flag (one CPU ``int32``, allocated once)
    and returns the outcome of the vote started at the previous call. All ranks call :meth:`vote` the same number
    of times, so the ``n``-th call returns the same answer on every rank. The tensor is read and written through a
    NumPy view: no tensor method, no device, no allocation per vote.
    """

    def __init__(self, group: Any) -> None:
        self._group = group
        self._ballot = torch.zeros(1, dtype=torch.int32)
        self._ballot_view = self._ballot.numpy()
        self._options = dist.AllreduceOptions()
        self._options.reduceOp = dist.ReduceOp(dist.ReduceOp.MAX)
        self._pending: dist.Work | None = None

    def vote(self, flag: bool) -> bool:
        """Start this step's vote with ``flag``; return whether any rank's flag was up in the previous vote."""
        raised = False
        if self._pending is not None:
            self._pending.wait()
            raised = bool(self._ballot_view[0])
        self._ballot_view[0] = int(flag)
        # Straight to the gloo group: cheaper than ``dist.all_reduce``'s checks, and never an HCCL collective.
        self._pending = self._group.allreduce([self._ballot], self._options)
        return raised

    def close(self) -> None:
        """Finish the last vote (every rank started it) and release the group."""
        if self._pending is not None:
            self._pending.wait()
            self._pending = None
        dist.destroy_process_group(self._group)


def open_vote(timeout: timedelta | None) -> HostFlagVote:
    """A vote over a new gloo group of every rank (all ranks must call this together)."""
    return HostFlagVote(dist.new_group(backend="gloo", timeout=timeout or default_pg_timeout))
