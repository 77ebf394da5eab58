"""Stopping every rank on SIGTERM without a device collective or a host sync in any training step.

Lightning 2.6 agrees on SIGTERM, under every multi-process strategy, by broadcasting an ``int64`` flag tensor from
rank 0 and reading it back with ``.item()`` at the start of each training batch; its signal handler broadcasts too.
On a Gaudi that is one HCCL broadcast and one device-to-host wait per step (the host cannot build step N+1 while the
device runs step N), a collective inside a signal handler (which deadlocks when several ranks are signalled), and
only rank 0's signal counts.

:class:`SigtermAgreementHooks`, a Trainer strategy mixin shared by every HPU parallel strategy (through
:class:`~lightning_hpu.pytorch.strategies.hccl.HCCLParallelHooks`), does it on the host instead:

* the signal handler only records the signal (and, on the launching process, forwards it to the processes it
  started, as Lightning does); it runs no collective;
* at the start of each training batch every rank adds its flag to an asynchronous ``MAX`` all-reduce of one CPU
  integer over a host-side gloo group (:class:`HostFlagVote`), and reads the result of the one it started at the
  previous batch. Every rank reads the same result at the same batch, so all ranks stop together, one or two batches
  after the first signal on any rank, with exit status ``128 + SIGTERM`` (the run did not finish). The previous
  batch's vote has finished long before (every rank started it a whole step ago), so nothing waits on the device.

:mod:`lightning_hpu.integration` routes Lightning's per-batch broadcast and its handler here for these strategies.
"""

from __future__ import annotations

from lightning.fabric.utilities.distributed import _distributed_is_initialized
from lightning.pytorch.strategies import ParallelStrategy
from typing_extensions import override

from lightning_hpu.distributed.sigterm import SIGTERM_EXIT_CODE, HostFlagVote, open_vote

__all__ = ["SIGTERM_EXIT_CODE", "HostFlagVote", "SigtermAgreementHooks"]


class SigtermAgreementHooks(ParallelStrategy):
    """Trainer strategy mixin: SIGTERM to any rank stops all ranks at the same batch, with no per-step device work.

    :meth:`record_sigterm` is what the SIGTERM handler runs; :meth:`any_rank_signalled` is asked at the start of
    every training batch, on every rank. The vote's gloo group is created at the first training batch (every rank
    gets there) and released at teardown.
    """

    _sigterm_received: bool = False
    _sigterm_vote: HostFlagVote | None = None

    @property
    def sigterm_received(self) -> bool:
        """Whether this process received SIGTERM (whether or not the ranks agreed on it yet)."""
        return self._sigterm_received

    def record_sigterm(self, signum: int) -> None:
        """Note the signal; on the launching process, pass it on to the processes it started. No collective."""
        if not self._sigterm_received and self.launcher is not None:
            self.launcher.kill(signum)
        self._sigterm_received = True

    def any_rank_signalled(self) -> bool:
        """Vote with this rank's flag; whether any rank had received SIGTERM at the previous vote (same on all)."""
        if self._sigterm_vote is None:
            if not _distributed_is_initialized():
                return self._sigterm_received
            self._sigterm_vote = open_vote(getattr(self, "_timeout", None))
        return self._sigterm_vote.vote(self._sigterm_received)

    @override
    def teardown(self) -> None:
        if self._sigterm_vote is not None:
            self._sigterm_vote.close()
            self._sigterm_vote = None
        self._sigterm_received = False
        super().teardown()
