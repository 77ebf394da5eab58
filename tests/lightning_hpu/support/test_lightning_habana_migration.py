"""lightning-habana code runs with only its imports renamed: ``device="hpu"``, ``convert_modules`` and old names."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import lightning_hpu
from gaudi_standin.bridge.habana_frameworks.torch.hpex.experimental import transformer_engine as te
from lightning_hpu import (
    HPUAccelerator,
    HPUDeepSpeedPrecisionPlugin,
    HPUFSDPPrecisionPlugin,
    HPUParallelStrategy,
    HPUPrecision,
    HPUPrecisionPlugin,
    SingleHPUStrategy,
)
from lightning_hpu.fabric.plugins.fsdp_precision import HPUFSDPPrecision as FabricHPUFSDPPrecision
from tests.helpers.models import TinyClassifier
from tests.helpers.trainer import quiet_trainer

PLUGINS = [
    HPUPrecisionPlugin,
    HPUPrecision,
    HPUDeepSpeedPrecisionPlugin,
    HPUFSDPPrecisionPlugin,
    FabricHPUFSDPPrecision,
]


@pytest.mark.parametrize("plugin", PLUGINS, ids=lambda cls: f"{cls.__module__}.{cls.__name__}")
def test_device_hpu_is_accepted_and_any_other_device_refused(standin: Any, plugin: type) -> None:
    assert plugin(device="hpu", precision="bf16-mixed").precision == "bf16-mixed"
    assert plugin(precision="bf16-mixed").device == "hpu"  # lightning-habana's attribute
    assert plugin("bf16-mixed", "hpu").precision == "bf16-mixed"  # lightning-habana's positional order
    with pytest.raises(ValueError, match=r"^`device='cpu'`: HPU precision plugins run on the HPU only;"):
        plugin(device="cpu", precision="bf16-mixed")


def test_lightning_habanas_old_class_names_are_the_same_classes() -> None:
    assert lightning_hpu.HPUDDPStrategy is HPUParallelStrategy
    assert lightning_hpu.HPUFSDPPrecision is HPUFSDPPrecisionPlugin


def test_a_lightning_habana_trainer_runs_with_its_plugin_arguments(standin: Any) -> None:
    x = torch.randn(32, 8)
    data = DataLoader(TensorDataset(x, (x[:, 0] > 0).long()), batch_size=8)
    model = TinyClassifier(classes=2, lr=0.1, activation=nn.ReLU)
    quiet_trainer(
        accelerator=HPUAccelerator(),
        devices=1,
        strategy=SingleHPUStrategy(),
        plugins=[HPUPrecisionPlugin(device="hpu", precision="bf16-mixed")],
        max_steps=2,
        enable_checkpointing=False,
    ).fit(model, data)
    assert model.dtypes == [torch.bfloat16, torch.bfloat16]


def test_convert_modules_for_fp8_training(standin: Any) -> None:
    plugin = HPUPrecisionPlugin(device="hpu", precision="fp8")
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
    weight = model[0].weight
    plugin.convert_modules(nn.Linear(2, 2), recipe=te.recipe.DelayedScaling)  # the class: its default recipe
    assert plugin.fp8_recipe == te.recipe.DelayedScaling()
    converted = plugin.convert_modules(model, replace_layers=True, recipe={"fp8_format": "HYBRID", "margin": 1})
    assert converted is model and isinstance(model[0], te.Linear) and isinstance(model[2], te.Linear)
    assert model[0].weight is weight  # the trained weights are kept
    assert plugin.fp8_recipe.fp8_format is te.recipe.Format.HYBRID and plugin.fp8_recipe.margin == 1

    # replace_layers=False: only layers that already are the engine's run in fp8; nn.Linear stays, also when the
    # Trainer converts the model later.
    keep = HPUPrecisionPlugin("fp8")
    mixed = nn.Sequential(nn.Linear(8, 8), te.Linear(8, 2, device="cpu"))
    assert keep.convert_modules(mixed) is mixed
    assert type(keep.convert_module(mixed)[0]) is nn.Linear and keep.fp8_layers == ["1"]


def test_convert_modules_needs_fp8_and_the_deepspeed_plugin_has_it_too(standin: Any) -> None:
    with pytest.raises(ValueError, match=r"^convert_modules\(\) applies to precision='fp8' only"):
        HPUPrecisionPlugin("bf16-mixed").convert_modules(nn.Linear(2, 2))
    with pytest.raises(ValueError, match=r"^convert_modules\(\) applies to precision='fp8' only"):
        HPUDeepSpeedPrecisionPlugin("bf16-mixed").convert_modules(nn.Linear(2, 2))
    plugin = HPUDeepSpeedPrecisionPlugin(precision="fp8", device="hpu")
    model = nn.Sequential(nn.Linear(4, 4))
    plugin.convert_modules(model, replace_layers=True)
    assert isinstance(model[0], te.Linear)


def test_convert_modules_for_fp8_inference_goes_through_inc(
    standin: Any,
    inc: types.SimpleNamespace,
    tmp_path: Path,
) -> None:
    plugin = HPUPrecisionPlugin("fp8")
    model = nn.Linear(4, 4)
    assert plugin.convert_modules(model, inference=True, quant=False, fp8_data_path=str(tmp_path)) is model
    assert plugin.convert_modules(model, inference=True, quant=True, fp8_data_path=str(tmp_path)) is model
    assert [name for name, _, _ in inc.calls] == ["prepare", "convert"]
    assert inc.calls[0][2].mode == "MEASURE" and inc.calls[1][2].mode == "QUANTIZE"
    assert inc.calls[0][2].dump_stats_path == str(tmp_path / "inc_output" / "measure")
    with pytest.raises(FileNotFoundError, match=r"`quant='nowhere\.json'` is not a file"):
        plugin.convert_modules(model, inference=True, quant="nowhere.json")
    with pytest.raises(TypeError, match="`quant` must be either a bool, file path or a dictionary"):
        plugin.convert_modules(model, inference=True, quant=None)


def test_lightning_habanas_fp8_availability_flags(
    standin: Any, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    bf16 = HPUPrecisionPlugin("bf16-mixed")
    assert not bf16.fp8_training_available and not bf16.fp8_inference_available
    monkeypatch.setitem(sys.modules, "neural_compressor", None)  # INC absent: fp8 inference is not available
    fp8 = HPUPrecisionPlugin("fp8")
    assert fp8.fp8_training_available and not fp8.fp8_inference_available
    monkeypatch.delitem(sys.modules, "neural_compressor")
    request.getfixturevalue("inc")  # INC importable
    assert fp8.fp8_inference_available


def test_fabrics_old_single_device_name(standin: Any) -> None:
    from lightning.fabric import Fabric

    from lightning_hpu.fabric.strategies import SingleHPUStrategy as FabricSingleHPUStrategy

    assert type(Fabric(accelerator="hpu", strategy="single_hpu").strategy) is FabricSingleHPUStrategy
