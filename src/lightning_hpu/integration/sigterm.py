"""The patch that routes Lightning's SIGTERM agreement to
:class:`~lightning_hpu.pytorch.strategies.sigterm.SigtermAgreementHooks`.

* ``_TrainingEpochLoop._broadcast_sigterm_tensor`` (a device broadcast and ``.item()`` per training batch) becomes a
  host-side vote; when the ranks agree, Lightning's ``received_sigterm`` is set on every rank and
  ``SIGTERMException`` is raised with a non-zero exit status.
* ``_SignalConnector._sigterm_notifier_fn`` (the SIGTERM handler, which broadcasts) only records the signal. Outside
  ``fit`` there is no training batch to vote at, so the evaluation loops stop on the local flag.

Strategies without the mixin, and single-process runs, keep Lightning's behaviour.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lightning.pytorch.loops.training_epoch_loop import _TrainingEpochLoop
from lightning.pytorch.trainer.connectors.signal_connector import _SignalConnector
from lightning.pytorch.trainer.states import TrainerFn
from lightning.pytorch.utilities.exceptions import SIGTERMException

from lightning_hpu.integration.wrapping import check_methods, wrap
from lightning_hpu.pytorch.strategies.sigterm import SIGTERM_EXIT_CODE, SigtermAgreementHooks

#: Lightning's SIGTERM agreement: the loop's per-batch broadcast and the signal handler (class, method).
SIGTERM_METHODS = (
    (_TrainingEpochLoop, "_broadcast_sigterm_tensor"),
    (_SignalConnector, "_sigterm_notifier_fn"),
)


def check() -> None:
    """Refuse a Lightning that moved the methods of :data:`SIGTERM_METHODS`, before anything is patched."""
    for owner, name in SIGTERM_METHODS:
        check_methods(owner, (name,))


def agreeing_strategy(trainer: Any) -> SigtermAgreementHooks | None:
    """The trainer's strategy when it agrees on SIGTERM on the host and several processes run, else ``None``."""
    strategy = trainer.strategy
    if isinstance(strategy, SigtermAgreementHooks) and strategy.world_size > 1:
        return strategy
    return None


def vote_each_batch(original: Callable[..., None]) -> Callable[..., None]:
    """The loop's per-batch SIGTERM broadcast, as a host-side vote."""

    def wrapper(self: Any) -> None:
        strategy = agreeing_strategy(self.trainer)
        if strategy is None:
            original(self)
            return
        if strategy.any_rank_signalled():
            self.trainer._signal_connector.received_sigterm = True
            raise sigterm_exception()

    return wrapper


def sigterm_exception() -> SIGTERMException:
    """Lightning's ``SIGTERMException`` with the non-zero exit status: Lightning's development head (after 2.6.5)
    gives it 143 itself and takes no argument; 2.6 leaves it 0 unless given one."""
    error = SIGTERMException()
    return error if error.code else SIGTERMException(SIGTERM_EXIT_CODE)


def record_signal(original: Callable[..., None]) -> Callable[..., None]:
    """The SIGTERM handler, recording the signal without a collective."""

    def wrapper(self: Any, signum: Any, frame: Any) -> None:
        strategy = agreeing_strategy(self.trainer)
        if strategy is None:
            original(self, signum, frame)
            return
        strategy.record_sigterm(signum)
        if self.trainer.state.fn != TrainerFn.FITTING:
            self.received_sigterm = True

    return wrapper


def install() -> None:
    """Wrap the loop's broadcast and the signal handler."""
    wrap(_TrainingEpochLoop, "_broadcast_sigterm_tensor", vote_each_batch)
    wrap(_SignalConnector, "_sigterm_notifier_fn", record_signal)
