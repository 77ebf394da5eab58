"""Lightning's and the HPU's precision names given as strings, on the Trainer and Fabric with an HPU accelerator.

Each name reaches the precision plugin its page (docs/guide/precision.md) promises; the HPU's own names are refused on
other accelerators with Lightning's words first. What each name means is kept in ``lightning_hpu.precision.names``.
"""

from __future__ import annotations

import re
import types
from typing import Any

import pytest
import torch
from lightning.fabric import Fabric
from lightning.pytorch import Trainer

from lightning_hpu import HPUPrecisionPlugin
from lightning_hpu.fabric.plugins.precision import HPUPrecision
from lightning_hpu.runtime import HPUConfigurationError, settings
from tests.helpers.fp8_recorders import make_fake_engine
from tests.helpers.paths import DOCS
from tests.helpers.standin import reset_backend
from tests.helpers.trainer import quiet_trainer

deepspeed = pytest.importorskip("deepspeed")

GUIDE = DOCS / "guide"


@pytest.fixture(autouse=True)
def _two_standin_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two stand-in HPUs, as the strategy-name tests have them (DeepSpeed is built with ``devices=2``)."""
    monkeypatch.setenv(settings.CPU_DEVICES_ENV, "2")
    reset_backend()


def _build(owner: str, strategy: Any, **kwargs: Any) -> Any:
    """The strategy ``Trainer``/``Fabric`` ends up with for ``accelerator="hpu"`` and ``strategy``."""
    if owner == "Trainer":
        return quiet_trainer(accelerator="hpu", strategy=strategy, **kwargs).strategy
    return Fabric(accelerator="hpu", strategy=strategy, **kwargs).strategy


@pytest.mark.parametrize("owner", ["Trainer", "Fabric"])
@pytest.mark.parametrize("precision", ["transformer-engine", "transformer-engine-float16"])
def test_transformer_engine_reaches_the_hpu_fp8_path(owner: str, precision: str, standin: Any) -> None:
    from gaudi_standin.bridge.habana_frameworks.torch.hpex.experimental import transformer_engine

    plugin = _build(owner, "auto", precision=precision).precision_plugin if owner == "Trainer" else None
    if plugin is None:
        plugin = _build(owner, "auto", precision=precision).precision
    # The stand-in's emulated engine made the recipe: the name reached the fp8 path.
    assert isinstance(plugin, HPUPrecision) and plugin.is_fp8
    assert isinstance(plugin.fp8_recipe, transformer_engine.recipe.DelayedScaling)


@pytest.mark.parametrize(
    ("precision", "outside", "weights"),
    [
        # Lightning's names keep Lightning's meaning: the weights in bf16 (fp16) too.
        ("transformer-engine", torch.bfloat16, torch.bfloat16),
        ("transformer-engine-float16", torch.float16, torch.float16),
        # The HPU's own: fp32 weights, autocast around the engine's layers.
        ("fp8", torch.bfloat16, torch.float32),
        ("fp8-float16", torch.float16, torch.float32),
    ],
)
def test_the_fp8_names_run_the_engine_layers_in_fp8(
    precision: str, outside: torch.dtype, weights: torch.dtype, standin: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    te: types.SimpleNamespace = make_fake_engine()
    monkeypatch.setattr(standin, "transformer_engine", lambda: te)
    trainer = Trainer(accelerator="hpu", precision=precision, logger=False)  # type: ignore[arg-type]
    fabric = Fabric(accelerator="hpu", precision=precision)  # type: ignore[arg-type]
    for plugin in (trainer.precision_plugin, fabric.strategy.precision):
        assert isinstance(plugin, HPUPrecision) and plugin.precision == precision
        module = plugin.convert_module(torch.nn.Sequential(torch.nn.Linear(3, 2)))
        assert isinstance(module[0], te.Linear) and module[0].weight.dtype == weights
        with plugin.forward_context():
            assert te.state["fp8_active"]
            assert torch.get_autocast_dtype("hpu") == outside
    assert isinstance(trainer.precision_plugin, HPUPrecisionPlugin)


@pytest.mark.parametrize("owner", ["Trainer", "Fabric"])
@pytest.mark.parametrize(
    ("precision", "outside"),
    [
        ("transformer-engine", "bf16-true"),
        ("transformer-engine-float16", "16-true"),
        ("fp8", "bf16-mixed"),
        ("fp8-float16", "16-mixed"),
    ],
)
def test_transformer_engine_under_deepspeed_means_hpu_deepspeed_fp8(
    owner: str, precision: str, outside: str, standin: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lightning_hpu import HPUDeepSpeedPrecisionPlugin
    from lightning_hpu.fabric.plugins.deepspeed_precision import HPUDeepSpeedPrecision

    te: types.SimpleNamespace = make_fake_engine()
    monkeypatch.setattr(standin, "transformer_engine", lambda: te)
    strategy = _build(owner, "deepspeed", precision=precision)
    plugin = strategy.precision_plugin if owner == "Trainer" else strategy.precision
    assert type(plugin) is (HPUDeepSpeedPrecisionPlugin if owner == "Trainer" else HPUDeepSpeedPrecision)
    assert plugin.precision == outside, "DeepSpeed's own config: bf16 (or fp16) outside the engine's layers"
    assert plugin.fp8 is not None and plugin.fp8.is_fp8
    layer = torch.nn.Linear(3, 2)
    module = plugin.convert_module(torch.nn.Sequential(layer))
    assert isinstance(module[0], te.Linear) and module[0].weight is layer.weight
    with plugin.forward_context():
        assert te.state["fp8_active"]
    assert te.log["autocast"][-1]["fp8_recipe"] is plugin.fp8.fp8_recipe


def _readme_precision_names() -> dict[str, str]:
    """The names of the guide's precision table (its first section): each spelling, and the full name it means."""
    section = (GUIDE / "precision.md").read_text().split("\n## ", 1)[0]
    table = {}
    for row in section.splitlines():
        if row.startswith('| `"'):
            spellings = re.findall(r'`"([^"`]+)"`', row.split("|")[1])
            table.update(dict.fromkeys(spellings, spellings[0]))
    return table


@pytest.mark.parametrize("owner", ["Trainer", "Fabric"])
def test_every_precision_the_readme_advertises_works_as_a_string(
    owner: str, standin: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    te: types.SimpleNamespace = make_fake_engine()
    monkeypatch.setattr(standin, "transformer_engine", lambda: te)
    table = _readme_precision_names()
    assert {"32-true", "bf16-mixed", "16-mixed", "bf16-true", "16-true", "fp8", "fp8-float16", "bf16"} <= set(table)
    for given, name in table.items():
        if owner == "Trainer":
            plugin = Trainer(accelerator="hpu", precision=given, logger=False).precision_plugin  # type: ignore[arg-type]
        else:
            plugin = Fabric(accelerator="hpu", precision=given).strategy.precision  # type: ignore[arg-type]
        assert isinstance(plugin, HPUPrecision) and plugin.precision == name, given


@pytest.mark.parametrize("owner", ["Trainer", "Fabric"])
def test_hpu_precision_names_need_an_hpu(owner: str, standin: Any) -> None:
    build = Trainer if owner == "Trainer" else Fabric
    with pytest.raises(HPUConfigurationError, match=r"^Precision 'fp8' is invalid\. Allowed precision values: .*\. "):
        build(accelerator="cpu", precision="fp8")  # Lightning's words first, then the HPU sentence
    ours = rf"\. `{owner}\(precision='fp8'\)` is an HPU precision: use it with accelerator='hpu'\.$"
    with pytest.raises(HPUConfigurationError, match=ours):
        build(accelerator="cpu", precision="fp8")
    # A precision plugin given as well is still refused, as Lightning refuses any such pair.
    with pytest.raises(ValueError, match="Choose one"):
        plugin = HPUPrecisionPlugin("bf16-mixed") if owner == "Trainer" else HPUPrecision("bf16-mixed")
        build(accelerator="hpu", precision="fp8", plugins=[plugin])
