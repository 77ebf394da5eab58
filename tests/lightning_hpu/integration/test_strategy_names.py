"""Every strategy and profiler name Lightning knows, with an HPU accelerator, on the Trainer and Fabric.

The registry walks use the installed Lightning's registries, so a name a new Lightning release adds is checked too:
it must build an HPU strategy or be refused at construction with one sentence naming the HPU strategy to use.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import torch
from lightning.fabric import Fabric
from lightning.fabric.strategies import STRATEGY_REGISTRY as FABRIC_REGISTRY
from lightning.fabric.strategies import DDPStrategy as FabricDDPStrategy
from lightning.fabric.strategies import ParallelStrategy as FabricParallelStrategy
from lightning.pytorch import Trainer
from lightning.pytorch.profilers import AdvancedProfiler, SimpleProfiler
from lightning.pytorch.strategies import DDPStrategy, ParallelStrategy, StrategyRegistry
from lightning.pytorch.utilities.exceptions import MisconfigurationException

from lightning_hpu import HPUDeepSpeedStrategy, HPUParallelStrategy, HPUProfiler
from lightning_hpu.distributed.hccl import GAUDI_DDP_DEFAULTS
from lightning_hpu.fabric.strategies import HPUParallelStrategy as FabricHPUParallelStrategy
from lightning_hpu.fabric.strategies.base import FabricHPUStrategyHooks
from lightning_hpu.fabric.strategies.deepspeed import HPUDeepSpeedStrategy as FabricHPUDeepSpeedStrategy
from lightning_hpu.integration import strategy_names
from lightning_hpu.pytorch.strategies.base import HPUStrategyHooks
from lightning_hpu.runtime import HPUConfigurationError, settings
from tests.helpers.paths import DOCS
from tests.helpers.standin import reset_backend
from tests.helpers.trainer import quiet_trainer

deepspeed = pytest.importorskip("deepspeed")

GUIDE = DOCS / "guide"
REGISTRIES = {"Trainer": StrategyRegistry, "Fabric": FABRIC_REGISTRY}
HPU_HOOKS = {"Trainer": HPUStrategyHooks, "Fabric": FabricHPUStrategyHooks}


@pytest.fixture(autouse=True)
def _two_standin_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two stand-in HPUs, so the DDP names can be built with ``devices=2`` (nothing is launched)."""
    monkeypatch.setenv(settings.CPU_DEVICES_ENV, "2")
    reset_backend()


def _build(owner: str, strategy: Any, **kwargs: Any) -> Any:
    """The strategy ``Trainer``/``Fabric`` ends up with for ``accelerator="hpu"`` and ``strategy``."""
    if owner == "Trainer":
        trainer = quiet_trainer(accelerator="hpu", strategy=strategy, **kwargs)
        return trainer.strategy
    return Fabric(accelerator="hpu", strategy=strategy, **kwargs).strategy


def _lightning_names(owner: str) -> list[tuple[str, str]]:
    hooks = HPU_HOOKS[owner]
    registry = REGISTRIES[owner]
    return [
        (owner, name)
        for name in sorted(registry.available_strategies())
        if not issubclass(registry[name]["strategy"], hooks) and "nvme" not in name  # nvme: needs a directory
    ]


@pytest.mark.parametrize(("owner", "name"), _lightning_names("Trainer") + _lightning_names("Fabric"))
def test_every_lightning_strategy_name_runs_on_hpu_or_is_refused_naming_an_hpu_strategy(owner: str, name: str) -> None:
    registry = REGISTRIES[owner]
    try:
        strategy = _build(owner, name, devices=1)
    except ValueError as error:
        message = str(error)
        assert message.startswith(f"`{owner}(strategy={name!r})` cannot drive an HPU"), message
        (use,) = [word for word in message.split("'") if word.startswith("hpu_")][-1:]
        assert message.endswith(f"use strategy={use!r} instead.")
        return
    assert isinstance(strategy, HPU_HOOKS[owner]), type(strategy)
    # The HPU strategy is the one registered under the name of the Lightning strategy's HPU twin.
    twin = strategy_names.hpu_strategy_for(name, registry, lambda cls: issubclass(cls, HPU_HOOKS[owner]), owner)
    assert twin is not None
    assert type(strategy) is registry[twin[0]]["strategy"]


@pytest.mark.parametrize("owner", ["Trainer", "Fabric"])
def test_the_table_says_what_the_walk_expects(owner: str) -> None:
    """Names that must run: DeepSpeed and DDP (popen/spawn) presets, single_device; names that must not: the rest."""
    registry = REGISTRIES[owner]
    runs, refused = [], []
    for _, name in _lightning_names(owner):
        try:
            strategy_names.hpu_strategy_for(name, registry, lambda cls: issubclass(cls, HPU_HOOKS[owner]), owner)
            runs.append(name)
        except ValueError:
            refused.append(name)
    assert {name for name in runs if name.startswith("deepspeed")} == {
        name for name in registry.available_strategies() if name.startswith("deepspeed") and "nvme" not in name
    }
    assert "ddp" in runs and "ddp_spawn" in runs and "ddp_find_unused_parameters_true" in runs
    assert {"ddp_fork", "ddp_notebook", "xla"} <= set(refused)
    assert "fsdp" in runs and "fsdp_cpu_offload" in runs
    assert not [name for name in runs if "fork" in name or "notebook" in name or "xla" in name or "tpu" in name]


@pytest.mark.parametrize("owner", ["Trainer", "Fabric"])
def test_deepspeed_presets_keep_lightnings_zero_settings(owner: str, tmp_path: Any) -> None:
    registry = REGISTRIES[owner]
    hpu_cls = HPUDeepSpeedStrategy if owner == "Trainer" else FabricHPUDeepSpeedStrategy
    presets = [name for name in registry.available_strategies() if name.startswith("deepspeed")]
    assert len(presets) >= 7
    for name in presets:
        entry = registry[name]
        extra = {"nvme_path": str(tmp_path)} if "nvme" in name else {}
        lightning = entry["strategy"](**entry["init_params"], **extra)
        if extra:  # a preset's settings plus a directory: an object, so build the twin the same way
            settings = strategy_names.hpu_strategy_for(
                name, registry, lambda cls: issubclass(cls, HPU_HOOKS[owner]), owner
            )
            assert settings is not None and settings[0] == "hpu_deepspeed"
            with pytest.warns(UserWarning, match="NVMe offload with DeepSpeed ZeRO stage 3"):
                strategy = _build(owner, hpu_cls(**settings[1], **extra), devices=1)
        else:
            strategy = _build(owner, name, devices=1)
        assert type(strategy) is hpu_cls, name
        assert strategy.config["zero_optimization"] == lightning.config["zero_optimization"], name
    stage_3_offload = _build(owner, "deepspeed_stage_3_offload", devices=1).config["zero_optimization"]
    assert stage_3_offload["stage"] == 3
    assert stage_3_offload["offload_optimizer"]["device"] == stage_3_offload["offload_param"]["device"] == "cpu"
    assert _build(owner, "deepspeed_stage_1", devices=1).config["zero_optimization"]["stage"] == 1


@pytest.mark.parametrize("owner", ["Trainer", "Fabric"])
def test_ddp_variants_keep_their_ddp_settings(owner: str) -> None:
    registry = REGISTRIES[owner]
    hpu_cls = HPUParallelStrategy if owner == "Trainer" else FabricHPUParallelStrategy
    variants = [
        name
        for name in registry.available_strategies()
        if issubclass(registry[name]["strategy"], (DDPStrategy, FabricDDPStrategy))
        and registry[name]["init_params"].get("start_method") in ("popen", "spawn")
    ]
    assert {"ddp", "ddp_spawn", "ddp_find_unused_parameters_true"} <= set(variants)
    for name in variants:
        strategy = _build(owner, name, devices=2)
        assert type(strategy) is hpu_cls, name
        expected = {key: value for key, value in registry[name]["init_params"].items() if key != "start_method"}
        assert strategy._ddp_kwargs == {**GAUDI_DDP_DEFAULTS, **expected}, name
    if owner == "Trainer":
        assert _build(owner, "ddp_spawn_find_unused_parameters_false", devices=2)._ddp_kwargs == {
            **GAUDI_DDP_DEFAULTS,
            "find_unused_parameters": False,
        }


@pytest.mark.parametrize("owner", ["Trainer", "Fabric"])
@pytest.mark.parametrize(
    ("name", "use"), [("ddp_notebook", "hpu_parallel"), ("single_xla", "hpu_single"), ("xla", "hpu_parallel")]
)
def test_unsupported_names_are_refused_at_construction(owner: str, name: str, use: str) -> None:
    with pytest.raises(ValueError, match=rf"^`{owner}\(strategy='{name}'\)` cannot drive an HPU .* strategy='{use}'"):
        _build(owner, name, devices=2)


@pytest.mark.parametrize("owner", ["Trainer", "Fabric"])
def test_a_name_a_new_lightning_registers_is_refused_or_mapped_by_its_family(owner: str) -> None:
    registry = REGISTRIES[owner]
    base = ParallelStrategy if owner == "Trainer" else FabricParallelStrategy
    ddp = DDPStrategy if owner == "Trainer" else FabricDDPStrategy
    new_family = type("NewAcceleratorStrategy", (base,), {})
    registry.register("new_family", new_family)
    registry.register("ddp_new_preset", ddp, find_unused_parameters=True, static_graph=True, start_method="popen")
    try:
        with pytest.raises(ValueError, match=r"'new_family'\)` cannot drive an HPU .*use strategy='hpu_parallel'"):
            _build(owner, "new_family", devices=2)
        strategy = _build(owner, "ddp_new_preset", devices=2)
        assert isinstance(strategy, HPU_HOOKS[owner])
        assert strategy._ddp_kwargs == {**GAUDI_DDP_DEFAULTS, "find_unused_parameters": True, "static_graph": True}
    finally:
        registry.remove("new_family")
        registry.remove("ddp_new_preset")


def test_lightning_strategy_objects_without_an_hpu_twin_are_refused_naming_the_hpu_strategy() -> None:
    from lightning.fabric.strategies import DataParallelStrategy as FabricDataParallelStrategy
    from lightning.pytorch.strategies import SingleDeviceStrategy

    # DDP, FSDP, ModelParallel and DeepSpeed objects run as their twins (test_strategy_objects.py); these do not.
    with pytest.raises(ValueError, match=r"SingleDeviceStrategy\(\.\.\.\)\)` cannot drive an HPU .*'hpu_single'"):
        _build("Trainer", SingleDeviceStrategy(device=torch.device("cpu")))
    with pytest.raises(ValueError, match=r"DataParallelStrategy\(\.\.\.\)\)` cannot drive an HPU .*'hpu_parallel'"):
        _build("Fabric", FabricDataParallelStrategy(), devices=2)


def test_fabric_hpu_deepspeed_by_name_and_object() -> None:
    assert type(_build("Fabric", "hpu_deepspeed_stage_3", devices=1)) is FabricHPUDeepSpeedStrategy
    strategy = FabricHPUDeepSpeedStrategy(stage=1, parallel_devices=2)
    with pytest.raises(ValueError, match=r"names 2 HPUs but the Fabric uses 1: pass `Fabric\(devices=2\)`"):
        _build("Fabric", strategy, devices=1)


def test_fabric_fast_ddp_refuses_ddp_arguments() -> None:
    with pytest.raises(ValueError, match=r"fast_ddp=True\) does not use DistributedDataParallel, so bucket_cap_mb"):
        FabricHPUParallelStrategy(fast_ddp=True, bucket_cap_mb=10)


# --- profiler names ----------------------------------------------------------------------------------------------


def test_profiler_hpu_gives_the_hpu_profiler_and_lightnings_names_still_work() -> None:
    for name in ("hpu", "HPU"):
        profiler = Trainer(accelerator="hpu", profiler=name, logger=False).profiler
        assert type(profiler) is HPUProfiler
    assert type(Trainer(accelerator="hpu", profiler="simple", logger=False).profiler) is SimpleProfiler
    assert type(Trainer(accelerator="cpu", profiler="advanced", logger=False).profiler) is AdvancedProfiler
    with pytest.raises(MisconfigurationException, match="it can only be one of"):
        Trainer(accelerator="hpu", profiler="no-such-profiler", logger=False)


# --- misspelt names: "did you mean" ---------------------------------------------------------------------------------


@pytest.mark.parametrize("owner", ["Trainer", "Fabric"])
@pytest.mark.parametrize(
    ("argument", "given", "meant"),
    [
        ("strategy", "hpu_paralel", "hpu_parallel"),
        ("strategy", "HPU_FAST_DDP ", "hpu_fast_ddp"),
        ("strategy", "hpu_deepspeed_stage_3_ofload", "hpu_deepspeed_stage_3_offload"),
        ("accelerator", "hpuu", "hpu"),
        ("accelerator", "HPU", "hpu"),
        ("precision", "bf16-mix", "bf16-mixed"),
        ("precision", "fp-8", "fp8"),
    ],
)
def test_misspelt_hpu_names_say_what_was_meant(owner: str, argument: str, given: str, meant: str, standin: Any) -> None:
    kwargs: dict[str, Any] = {"accelerator": "hpu", argument: given}
    build = Trainer if owner == "Trainer" else Fabric
    # After Lightning's own message for the name (tests/lightning_hpu/integration/test_lightning_error_text.py).
    with pytest.raises(
        HPUConfigurationError, match=rf"\. `{owner}\({argument}={given!r}\)` .*did you mean {meant!r}\?$"
    ):
        build(**kwargs)


def test_misspelt_profiler_name_says_hpu_and_other_names_stay_lightnings(standin: Any) -> None:
    with pytest.raises(
        MisconfigurationException, match=r"'xla'\]\. `Trainer\(profiler='hpuu'\)` .*did you mean 'hpu'\?$"
    ):
        Trainer(accelerator="hpu", profiler="hpuu", logger=False)
    with pytest.raises(MisconfigurationException, match="it can only be one of"):
        Trainer(accelerator="hpu", profiler="simpel", logger=False)  # close to Lightning's own name: its message


def test_misspelt_names_outside_hpu_keep_lightnings_errors() -> None:
    with pytest.raises(ValueError, match="You selected an invalid strategy name"):
        Trainer(accelerator="cpu", strategy="dpp", logger=False)
    with pytest.raises(ValueError, match="Precision 'bf16-mix' is invalid"):
        Trainer(accelerator="cpu", precision="bf16-mix", logger=False)  # type: ignore[arg-type]


def test_the_readme_names_table_says_what_each_lightning_name_does_on_hpu() -> None:
    page = (GUIDE / "accelerator-and-devices.md").read_text()
    section = page.split("\n### Lightning's names on HPU\n", 1)[1].split("\n#", 1)[0]
    checked = 0
    for row in section.splitlines():
        if not row.startswith("| `"):
            continue
        first, outcome = row.split("|")[1:3]
        refused = outcome.strip().startswith("refused")
        for name in re.findall(r'`"([a-z0-9_]+)"`', first):
            for owner, registry in REGISTRIES.items():
                if name not in registry:
                    continue
                is_hpu = lambda cls, owner=owner: issubclass(cls, HPU_HOOKS[owner])  # noqa: E731
                try:
                    strategy_names.hpu_strategy_for(name, registry, is_hpu, owner)
                    refused_here = False
                except ValueError:
                    refused_here = True
                assert refused_here == refused, f"the guide: {name!r} is {'refused' if refused else 'run'} ({owner})"
                checked += 1
    assert checked >= 20, "the table lists Lightning's names"
