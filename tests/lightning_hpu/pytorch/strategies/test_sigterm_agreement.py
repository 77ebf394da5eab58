"""The host-side SIGTERM agreement, in one process: the vote, the handler and the per-batch check.

``tests/lightning_hpu/pytorch/strategies/test_sigterm.py`` signals real 2-rank runs; these tests pin the pieces: the
vote answers one step late with
no tensor allocated and no host sync, the handler runs no collective, and the loop's check stops with a non-zero
status once the ranks agree.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
import torch.distributed as dist
from lightning.pytorch.loops.training_epoch_loop import _TrainingEpochLoop
from lightning.pytorch.trainer.connectors.signal_connector import _SignalConnector
from lightning.pytorch.trainer.states import TrainerFn
from lightning.pytorch.utilities.exceptions import SIGTERMException

from lightning_hpu import HPUDeepSpeedStrategy, HPUParallelStrategy, integration
from lightning_hpu.integration import wrapping
from lightning_hpu.pytorch.strategies.sigterm import SIGTERM_EXIT_CODE, HostFlagVote, SigtermAgreementHooks
from tests.helpers.paths import BENCHMARKS

sys.path.insert(0, str(BENCHMARKS))
from step_counters import TensorAllocations


@pytest.fixture
def gloo_world(tmp_path: Path) -> Iterator[None]:
    if dist.is_initialized():  # an in-process run of an earlier test left its group
        dist.destroy_process_group()
    dist.init_process_group("gloo", store=dist.FileStore(str(tmp_path / "store"), 1), rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def test_the_vote_answers_one_step_late_without_allocating_or_syncing(
    gloo_world: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    vote = HostFlagVote(dist.new_group(backend="gloo"))
    syncs: list[str] = []
    monkeypatch.setattr(torch.Tensor, "item", lambda self: syncs.append("item"))
    with TensorAllocations() as allocations:
        answers = [vote.vote(flag) for flag in (False, True, False, False)]
    assert answers == [False, False, True, False]
    assert allocations.total == 0 and syncs == []
    vote.close()


def test_every_hpu_parallel_strategy_agrees_on_the_host() -> None:
    assert issubclass(HPUParallelStrategy, SigtermAgreementHooks)
    assert issubclass(HPUDeepSpeedStrategy, SigtermAgreementHooks)


@pytest.fixture
def two_rank_strategy(monkeypatch: pytest.MonkeyPatch) -> HPUParallelStrategy:
    monkeypatch.setattr(HPUParallelStrategy, "world_size", property(lambda self: 2))

    def no_collectives(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a collective ran in the SIGTERM handler")

    for name in ("broadcast", "all_reduce", "barrier"):
        monkeypatch.setattr(dist, name, no_collectives)
    return HPUParallelStrategy()


@pytest.mark.parametrize(("stage", "stops_locally"), [(TrainerFn.FITTING, False), (TrainerFn.VALIDATING, True)])
def test_the_handler_only_records_the_signal(
    two_rank_strategy: HPUParallelStrategy, stage: TrainerFn, stops_locally: bool
) -> None:
    trainer = SimpleNamespace(strategy=two_rank_strategy, state=SimpleNamespace(fn=stage), local_rank=0)
    connector = _SignalConnector(trainer)  # type: ignore[arg-type]
    connector._sigterm_notifier_fn(signal.SIGTERM, None)  # type: ignore[arg-type]
    assert two_rank_strategy.sigterm_received
    # While fitting, the loops stop when the ranks agree, not on this rank's own flag.
    assert connector.received_sigterm is stops_locally


def test_the_loop_stops_with_a_non_zero_status_once_the_ranks_agree(
    two_rank_strategy: HPUParallelStrategy, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers = iter([False, True])
    monkeypatch.setattr(HPUParallelStrategy, "any_rank_signalled", lambda self: next(answers))
    trainer = SimpleNamespace(strategy=two_rank_strategy, _signal_connector=SimpleNamespace(received_sigterm=False))
    loop = SimpleNamespace(trainer=trainer)
    _TrainingEpochLoop._broadcast_sigterm_tensor(loop)  # type: ignore[arg-type]
    assert trainer._signal_connector.received_sigterm is False
    with pytest.raises(SIGTERMException) as stopped:
        _TrainingEpochLoop._broadcast_sigterm_tensor(loop)  # type: ignore[arg-type]
    assert stopped.value.code == SIGTERM_EXIT_CODE != 0
    assert trainer._signal_connector.received_sigterm is True


def test_integration_refuses_a_lightning_whose_sigterm_internals_moved() -> None:
    class MovedLoop:
        pass

    with pytest.raises(integration.LightningIntegrationError, match=r"MovedLoop lacks _broadcast_sigterm_tensor"):
        wrapping.check_methods(MovedLoop, ("_broadcast_sigterm_tensor",))
    assert hasattr(_TrainingEpochLoop._broadcast_sigterm_tensor, "__lightning_hpu_wrapped__")
    assert hasattr(_SignalConnector._sigterm_notifier_fn, "__lightning_hpu_wrapped__")
