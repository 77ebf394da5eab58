"""Every parallel strategy of both trees runs the set-up of every piece it is built from, in one process.

A strategy is a Lightning strategy with the package's mixins (docs/architecture.md, "What each strategy is built
from"); each piece does its part in the chain of ``setup_environment`` and ``teardown``, reached through
``super()``. A strategy that skips past a piece (as Fabric's DeepSpeed strategy once skipped the rank watchdog) is
caught here: each strategy is set up once on one stand-in HPU, and each piece's part is checked to have run.

The strategies are found from the two trees' exports (every ``...Strategy`` that is a Lightning
``ParallelStrategy``), so a new one is checked without being listed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import torch.distributed as dist
from lightning.fabric import Fabric
from lightning.fabric.strategies import ParallelStrategy as FabricParallelStrategy
from lightning.fabric.strategies import Strategy as FabricStrategy
from lightning.pytorch.strategies import ParallelStrategy as TrainerParallelStrategy
from lightning.pytorch.strategies import Strategy as TrainerStrategy

import lightning_hpu.fabric.strategies as fabric_strategies
import lightning_hpu.pytorch.strategies as trainer_strategies
from lightning_hpu.distributed import rank_watchdog_hooks
from lightning_hpu.distributed.fast_ddp import FastDDPGradients, FastDDPHooks
from lightning_hpu.distributed.hccl_collectives import HCCLCollectiveHooks
from lightning_hpu.distributed.rank_watchdog_hooks import RankWatchdogHooks
from lightning_hpu.pytorch.strategies.sigterm import SigtermAgreementHooks
from lightning_hpu.runtime.bridge import BridgeBackend
from tests.helpers.models import RegressionModel
from tests.helpers.trainer import quiet_trainer

pytest.importorskip("deepspeed")


def public_strategies(module: Any, base: type) -> list[type]:
    """The ``base`` strategy classes a tree exports (its mixins end in ``Hooks``, its strategies in ``Strategy``)."""
    found = {
        value
        for name, value in vars(module).items()
        if name.endswith("Strategy") and isinstance(value, type) and issubclass(value, base)
    }
    return sorted(found, key=lambda cls: cls.__name__)


TRAINER = public_strategies(trainer_strategies, TrainerParallelStrategy)
FABRIC = public_strategies(fabric_strategies, FabricParallelStrategy)

#: What some strategies need to be built (Fabric's model parallel strategy takes its parallelization function).
ARGUMENTS: dict[tuple[str, str], dict[str, Any]] = {
    ("Fabric", "HPUModelParallelStrategy"): {"parallelize_fn": lambda module, mesh: module}
}


@dataclass(frozen=True)
class Case:
    side: str  # "Trainer" or "Fabric"
    strategy_cls: type
    options: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        options = ",".join(f"{key}={value}" for key, value in self.options.items())
        return f"{self.side}-{self.strategy_cls.__name__}" + (f"({options})" if options else "")

    def set_up(self) -> Any:
        """The strategy as the Trainer or Fabric builds it on one HPU, then its ``setup_environment``."""
        arguments = {**ARGUMENTS.get((self.side, self.strategy_cls.__name__), {}), **self.options}
        if self.side == "Trainer":
            strategy = quiet_trainer(accelerator="hpu", devices=1, strategy=self.strategy_cls(**arguments)).strategy
            strategy.connect(RegressionModel())  # the Trainer connects its module before the set-up
        else:
            strategy = Fabric(accelerator="hpu", devices=1, strategy=self.strategy_cls(**arguments)).strategy
        strategy.setup_environment()
        return strategy


def cases() -> list[Case]:
    found = [Case(side, cls) for side, classes in (("Trainer", TRAINER), ("Fabric", FABRIC)) for cls in classes]
    # Fast DDP is a mode of the DDP strategies: set up both ways.
    fast = [Case(case.side, case.strategy_cls, {"fast_ddp": True}) for case in found]
    return found + [case for case in fast if issubclass(case.strategy_cls, FastDDPHooks)]


@dataclass
class Record:
    """What the pieces did, in order: ``(what, the process group's backend then, or None)``."""

    events: list[tuple[str, str | None]] = field(default_factory=list)

    def note(self, what: str) -> None:
        self.events.append((what, dist.get_backend() if dist.is_initialized() else None))

    def named(self, what: str) -> list[str | None]:
        return [backend for name, backend in self.events if name == what]


def _spy(record: Record, what: str, original: Callable[..., Any]) -> Callable[..., Any]:
    def spy(*args: Any, **kwargs: Any) -> Any:
        record.note(what)
        return original(*args, **kwargs)

    return spy


@pytest.fixture
def record(monkeypatch: pytest.MonkeyPatch) -> Iterator[Record]:
    """Spies on each piece's part: HCCL prepared on the bridge, the watchdog started, fast DDP's buffers released."""
    found = Record()
    monkeypatch.setattr(
        BridgeBackend, "initialize_distributed", _spy(found, "hccl prepared", BridgeBackend.initialize_distributed)
    )
    monkeypatch.setattr(rank_watchdog_hooks, "watch_job_of", _spy(found, "watchdog", rank_watchdog_hooks.watch_job_of))
    monkeypatch.setattr(FastDDPGradients, "clear", _spy(found, "fast ddp released", FastDDPGradients.clear))
    if dist.is_initialized():  # an in-process run of an earlier test left its group
        dist.destroy_process_group()
    yield found
    if dist.is_initialized():
        dist.destroy_process_group()


def test_the_strategies_of_both_trees_are_found() -> None:
    names = ["HPUDeepSpeedStrategy", "HPUFSDPStrategy", "HPUModelParallelStrategy", "HPUParallelStrategy"]
    assert [cls.__name__ for cls in TRAINER] == names
    assert [cls.__name__ for cls in FABRIC] == names


@pytest.mark.parametrize("case", cases(), ids=str)
def test_every_piece_of_a_parallel_strategy_sets_up(case: Case, record: Record) -> None:
    cls = case.strategy_cls
    # The pieces every HPU parallel strategy is built from.
    assert issubclass(cls, HCCLCollectiveHooks) and issubclass(cls, RankWatchdogHooks)
    assert case.side == "Fabric" or issubclass(cls, SigtermAgreementHooks)

    strategy = case.set_up()

    # HCCL: the bridge prepared the process before the group existed, and the group is HCCL's.
    assert record.named("hccl prepared") == [None]
    assert dist.is_initialized() and dist.get_backend() == "hccl"
    assert strategy.process_group_backend == "hccl"
    # The rank watchdog: started once, after the HCCL group (it stays idle with a single rank).
    assert record.named("watchdog") == ["hccl"], f"{case}: the rank watchdog's set-up did not run"
    if isinstance(strategy, SigtermAgreementHooks):
        # SIGTERM agreed on over a host-side group of the same ranks; released at teardown.
        assert strategy.any_rank_signalled() is False
        assert strategy._sigterm_vote is not None
    if isinstance(strategy, FastDDPHooks):
        assert strategy.fast_ddp is case.options.get("fast_ddp", False)
        assert isinstance(strategy._fast_gradients, FastDDPGradients)

    strategy.teardown()

    if isinstance(strategy, SigtermAgreementHooks):
        assert strategy._sigterm_vote is None, f"{case}: the SIGTERM agreement's teardown did not run"
    if isinstance(strategy, FastDDPHooks):
        assert record.named("fast ddp released"), f"{case}: fast DDP's teardown did not run"


@pytest.mark.parametrize(
    "strategy_cls",
    [*public_strategies(trainer_strategies, TrainerStrategy), *public_strategies(fabric_strategies, FabricStrategy)],
    ids=lambda cls: f"{cls.__module__.split('.')[1]}-{cls.__name__}",
)
def test_every_mixin_of_a_strategy_is_a_hooks_class_that_overrides_lightning(strategy_cls: type) -> None:
    """The naming rule (docs/architecture.md): a strategy's pieces end in ``Hooks`` and override Lightning's methods."""
    ours = [cls for cls in strategy_cls.__mro__[1:] if cls.__module__.startswith("lightning_hpu.")]
    lightning = [cls for cls in strategy_cls.__mro__ if cls.__module__.startswith("lightning.")]
    declared = {name for cls in lightning for name in vars(cls)}
    assert ours and lightning
    for piece in ours:
        assert piece.__name__.endswith("Hooks"), f"{strategy_cls.__name__} is built from {piece.__name__}"
        if piece.__module__.startswith("lightning_hpu.distributed."):  # shared by both trees: named for what it adds
            assert not piece.__name__.startswith(("HPU", "Fabric")), f"{piece.__name__}: drop the prefix"
        overridden = {name for name in vars(piece) if name in declared and not name.startswith("__")}
        overridden |= {"__init__"} if "__init__" in vars(piece) else set()
        assert overridden, f"{piece.__name__} overrides none of Lightning's methods: name it ...Helpers"
