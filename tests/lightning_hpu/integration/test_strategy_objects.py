"""Lightning's own strategy objects with an HPU accelerator: each runs as its HPU twin with the user's arguments, on
the Trainer and on Fabric; what the HPU cannot honour is refused with one sentence naming the argument."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
import torch
from lightning.fabric import Fabric
from lightning.fabric import strategies as fabric_lightning
from lightning.pytorch import Trainer
from lightning.pytorch import strategies as trainer_lightning
from lightning.pytorch.plugins.precision import MixedPrecision
from torch import nn

import lightning_hpu
from lightning_hpu import HPUConfigurationError
from lightning_hpu.distributed.hccl import GAUDI_DDP_DEFAULTS
from lightning_hpu.fabric import strategies as fabric_hpu
from lightning_hpu.integration import strategy_objects
from lightning_hpu.runtime import settings
from tests.helpers.standin import reset_backend
from tests.helpers.trainer import rank_zero_lines

#: Per side: Lightning's module of strategy classes, the HPU twins' module, and how the side is built.
SIDES: dict[str, tuple[Any, Any, Callable[..., Any]]] = {
    "Trainer": (trainer_lightning, lightning_hpu, lambda **kwargs: Trainer(logger=False, **kwargs).strategy),
    "Fabric": (fabric_lightning, fabric_hpu, lambda **kwargs: Fabric(**kwargs).strategy),
}


class Block(nn.Module):
    """A transformer block as LitGPT's auto-wrap policy names it."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)


def _parallelize(module: nn.Module, device_mesh: Any) -> nn.Module:
    return module


@pytest.fixture(autouse=True)
def _two_standin_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two stand-in HPUs, so two-device strategies can be built (nothing is launched)."""
    monkeypatch.setenv(settings.CPU_DEVICES_ENV, "2")
    reset_backend()


@pytest.fixture
def info_lines() -> Iterator[list[str]]:
    """The lines logged through Lightning's rank-zero logger."""
    with rank_zero_lines() as lines:
        yield lines


def _ddp(lightning: Any) -> Any:
    return lightning.DDPStrategy(find_unused_parameters=True, timeout=timedelta(seconds=42), start_method="spawn")


def _fsdp(lightning: Any) -> Any:  # LitGPT's pretrain strategy for several devices
    return lightning.FSDPStrategy(auto_wrap_policy={Block}, state_dict_type="full", sharding_strategy="SHARD_GRAD_OP")


def _deepspeed(lightning: Any) -> Any:
    return lightning.DeepSpeedStrategy(stage=3, offload_optimizer=True, load_full_weights=True)


def _model_parallel(lightning: Any) -> Any:
    if lightning is fabric_lightning:  # Fabric's takes the parallelize function, here positionally
        return lightning.ModelParallelStrategy(_parallelize, 2, 1, save_distributed_checkpoint=False)
    return lightning.ModelParallelStrategy(2, 1, save_distributed_checkpoint=False)


def _check_ddp(strategy: Any) -> None:
    assert strategy._ddp_kwargs == {**GAUDI_DDP_DEFAULTS, "find_unused_parameters": True}
    assert strategy._timeout == timedelta(seconds=42)
    assert strategy._start_method == "spawn"


def _check_fsdp(strategy: Any) -> None:
    assert strategy.sharding_strategy.name == "SHARD_GRAD_OP"
    assert strategy._state_dict_type == "full"
    fsdp_kwargs = strategy.kwargs if hasattr(strategy, "kwargs") else strategy._fsdp_kwargs  # Trainer's, Fabric's
    policy = fsdp_kwargs["auto_wrap_policy"]  # the set became FSDP's policy for Block, as Lightning makes it
    assert policy._module_classes == {Block}


def _check_deepspeed(strategy: Any) -> None:
    assert strategy.config["zero_optimization"]["stage"] == 3
    assert strategy.config["zero_optimization"]["offload_optimizer"]["device"] == "cpu"
    assert strategy.load_full_weights is True


def _check_model_parallel(strategy: Any) -> None:
    assert (strategy._data_parallel_size, strategy._tensor_parallel_size) == (2, 1)
    assert strategy._save_distributed_checkpoint is False
    if isinstance(strategy, fabric_hpu.HPUModelParallelStrategy):
        assert strategy._parallelize_fn is _parallelize


#: Per family: the Lightning object to build, the twin's class name, and what must have been carried over.
FAMILIES = {
    "DDPStrategy": (_ddp, "HPUParallelStrategy", _check_ddp),
    "FSDPStrategy": (_fsdp, "HPUFSDPStrategy", _check_fsdp),
    "DeepSpeedStrategy": (_deepspeed, "HPUDeepSpeedStrategy", _check_deepspeed),
    "ModelParallelStrategy": (_model_parallel, "HPUModelParallelStrategy", _check_model_parallel),
}


@pytest.mark.parametrize("owner", ["Trainer", "Fabric"])
@pytest.mark.parametrize("family", list(FAMILIES))
def test_a_lightning_strategy_object_runs_as_its_hpu_twin_with_the_same_arguments(
    owner: str, family: str, info_lines: list[str]
) -> None:
    lightning, hpu, build = SIDES[owner]
    make, twin_name, check = FAMILIES[family]
    given = make(lightning)
    strategy = build(accelerator="hpu", devices=2, strategy=given)
    twin = getattr(hpu, twin_name)
    assert type(strategy) is twin
    check(strategy)
    package = "lightning_hpu" if owner == "Trainer" else "lightning_hpu.fabric.strategies"
    line = f"`{owner}(strategy={family}(...))` runs on HPU as {package}.{twin_name}, with the same arguments."
    assert info_lines.count(line) == 1, info_lines


@pytest.mark.parametrize("owner", ["Trainer", "Fabric"])
def test_the_accelerator_object_and_auto_with_an_hpu_there_work_too(owner: str) -> None:
    lightning, hpu, build = SIDES[owner]
    accelerator = lightning_hpu.HPUAccelerator() if owner == "Trainer" else fabric_hpu_accelerator()
    assert type(build(accelerator=accelerator, devices=2, strategy=_fsdp(lightning))) is hpu.HPUFSDPStrategy
    assert type(build(accelerator="auto", devices=2, strategy=_ddp(lightning))) is hpu.HPUParallelStrategy


def fabric_hpu_accelerator() -> Any:
    from lightning_hpu.fabric.accelerator import HPUAccelerator

    return HPUAccelerator()


@pytest.mark.parametrize("owner", ["Trainer", "Fabric"])
@pytest.mark.parametrize(
    ("family", "argument", "value", "reason"),
    [
        ("DDPStrategy", "start_method", "fork", "cannot be forked"),
        ("DDPStrategy", "process_group_backend", "nccl", "over HCCL"),
        ("FSDPStrategy", "process_group_backend", "gloo", "over HCCL"),
        ("DeepSpeedStrategy", "process_group_backend", "nccl", "over HCCL"),
        ("ModelParallelStrategy", "process_group_backend", "nccl", "over HCCL"),
    ],
)
def test_an_argument_the_hpu_cannot_honour_is_refused_naming_it(
    owner: str, family: str, argument: str, value: str, reason: str
) -> None:
    lightning, _, build = SIDES[owner]
    extra = (_parallelize,) if family == "ModelParallelStrategy" and owner == "Fabric" else ()
    given = getattr(lightning, family)(*extra, **{argument: value})
    with pytest.raises(
        HPUConfigurationError, match=rf"^`{family}\({argument}={value!r}\)` cannot be carried over "
    ) as info:
        build(accelerator="hpu", devices=2, strategy=given)
    message = str(info.value)
    assert reason in message and message.endswith(".") and ". " not in message  # one sentence


def test_a_cuda_precision_plugin_is_refused_naming_the_argument() -> None:
    given = trainer_lightning.DDPStrategy(precision_plugin=MixedPrecision("bf16-mixed", "cuda"))
    with pytest.raises(HPUConfigurationError, match=r"^`DDPStrategy\(precision_plugin=.*not an HPU precision plugin"):
        Trainer(accelerator="hpu", devices=2, strategy=given, logger=False)


def test_devices_and_accelerators_of_another_kind_are_refused_naming_the_argument() -> None:
    ddp = fabric_lightning.DDPStrategy(parallel_devices=[torch.device("cuda", 0)])
    with pytest.raises(HPUConfigurationError, match=r"^`DDPStrategy\(parallel_devices=.*not HPUs"):
        strategy_objects.hpu_twin_of(ddp, "Fabric")
    from lightning.fabric.accelerators import CPUAccelerator

    fsdp = fabric_lightning.FSDPStrategy(accelerator=CPUAccelerator())
    with pytest.raises(HPUConfigurationError, match=r"^`FSDPStrategy\(accelerator=.*not the HPU accelerator"):
        strategy_objects.hpu_twin_of(fsdp, "Fabric")


@pytest.mark.parametrize("owner", ["Trainer", "Fabric"])
def test_a_subclass_is_refused_naming_the_twin_to_derive_from(owner: str) -> None:
    lightning, _, build = SIDES[owner]
    subclass = type("MyFSDP", (lightning.FSDPStrategy,), {})
    package = "lightning_hpu" if owner == "Trainer" else "lightning_hpu.fabric.strategies"
    with pytest.raises(
        HPUConfigurationError, match=rf"MyFSDP\(\.\.\.\)\)` cannot drive .*from {package}\.HPUFSDPStrategy"
    ):
        build(accelerator="hpu", devices=2, strategy=subclass())


def test_an_object_built_before_the_import_is_refused_naming_the_import() -> None:
    given = fabric_lightning.DDPStrategy()
    del given.__dict__["_lightning_hpu_init_arguments"]  # as if built before `import lightning_hpu` recorded it
    with pytest.raises(HPUConfigurationError, match=r"built before `import lightning_hpu`.*HPUParallelStrategy"):
        Fabric(accelerator="hpu", devices=2, strategy=given)


def test_objects_without_an_hpu_accelerator_stay_lightnings() -> None:
    given = trainer_lightning.DDPStrategy(find_unused_parameters=True)
    assert type(Trainer(accelerator="cpu", devices=2, strategy=given, logger=False).strategy) is type(given)
