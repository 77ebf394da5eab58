"""fp8: the engine conversion and recipe (with a recording stand-in for the engine), gating, and INC's flow."""

from __future__ import annotations

import json
import os
import sys
import types
from pathlib import Path
from typing import Any

import pytest
import torch
from lightning.fabric import Fabric
from lightning.pytorch import LightningModule, Trainer
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from lightning_hpu import (
    HPUFeatureUnavailableError,
    HPUFp8Inference,
    HPUPrecision,
    HPUPrecisionPlugin,
    fp8_finish_measurement,
    fp8_measure,
    fp8_quantize,
)
from lightning_hpu.fp8.inference import default_config
from lightning_hpu.runtime import settings
from tests.helpers.fp8_recorders import make_fake_engine
from tests.helpers.models import TinyRegressor
from tests.helpers.trainer import quiet_trainer


@pytest.fixture
def engine(standin: Any, monkeypatch: pytest.MonkeyPatch) -> types.SimpleNamespace:
    """The recording engine, served by the stand-in backend the way the bridge serves the real one."""
    te = make_fake_engine()
    monkeypatch.setattr(standin, "transformer_engine", lambda: te)
    return te


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 16, bias=False))
        self.special = SubLinear(16, 16)
        self.head = nn.Linear(16, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.special(self.encoder(x)))


class SubLinear(nn.Linear):
    """A Linear subclass with its own forward: conversion must leave it alone."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x) * 0.5


def _trained_net() -> tuple[Net, torch.Tensor]:
    torch.manual_seed(0)
    net = Net()
    x = torch.randn(32, 8)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for _ in range(5):
        opt.zero_grad()
        net(x).pow(2).mean().backward()
        opt.step()
    return net, x


# --- gating -----------------------------------------------------------------------------------------------------


def test_fp8_on_the_standin_uses_its_emulated_engine(standin: Any) -> None:
    from gaudi_standin.bridge.habana_frameworks.torch.hpex.experimental import transformer_engine

    plugin = HPUPrecisionPlugin("fp8", fp8_recipe={"fp8_format": "HYBRID", "margin": 1})
    assert standin.transformer_engine() is transformer_engine
    assert isinstance(plugin.fp8_recipe, transformer_engine.recipe.DelayedScaling)
    assert plugin.fp8_recipe.fp8_format is transformer_engine.recipe.Format.HYBRID and plugin.fp8_recipe.margin == 1


def test_fp8_refused_on_first_generation_gaudi(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(settings.CPU_DEVICE_NAME_ENV, "GAUDI")
    from lightning_hpu.runtime import get_backend

    monkeypatch.setattr(get_backend(), "transformer_engine", make_fake_engine)
    with pytest.raises(ValueError, match=r"^fp8 precision needs Gaudi2 or later, but this device is GAUDI;"):
        HPUPrecisionPlugin("fp8")


def test_fp8_arguments_need_fp8_precision(standin: Any) -> None:
    with pytest.raises(ValueError, match="`fp8_recipe` applies to precision='fp8' only"):
        HPUPrecisionPlugin("bf16-mixed", fp8_recipe={"margin": 0})
    with pytest.raises(ValueError, match="`fp8_layer_filter` applies to precision='fp8' only"):
        HPUPrecisionPlugin("bf16-mixed", fp8_layer_filter=lambda name, layer: True)


# --- conversion ---------------------------------------------------------------------------------------------------


def test_conversion_swaps_selected_layers_and_keeps_trained_outputs(engine: types.SimpleNamespace) -> None:
    net, x = _trained_net()
    expected = net(x).detach()
    params_before = {name: p for name, p in net.named_parameters()}

    plugin = HPUPrecisionPlugin("fp8", fp8_layer_filter=lambda name, layer: name != "head")
    converted = plugin.convert_module(net)

    assert converted is net  # in place, as DDP's setup expects
    assert plugin.fp8_layers == ["encoder.0", "encoder.2"]
    assert isinstance(net.encoder[0], engine.Linear) and isinstance(net.encoder[2], engine.Linear)
    assert type(net.head) is nn.Linear and type(net.special) is SubLinear
    assert [(c["in_features"], c["out_features"], c["bias"]) for c in engine.log["linear_init"]] == [
        (8, 16, True),
        (16, 16, False),
    ]
    assert all(c["params_dtype"] == torch.float32 for c in engine.log["linear_init"])
    # The trained parameters themselves live on in the engine's layers (optimizers keep working).
    assert dict(net.named_parameters()) == params_before
    assert net.encoder[2].bias is None
    # Outside fp8 autocast the converted model computes what the trained model did.
    torch.testing.assert_close(net(x), expected, rtol=1e-6, atol=1e-6)


def test_conversion_of_all_layers_and_of_a_bare_linear(engine: types.SimpleNamespace) -> None:
    net, _ = _trained_net()
    plugin = HPUPrecisionPlugin("fp8")
    plugin.convert_module(net)
    assert plugin.fp8_layers == ["encoder.0", "encoder.2", "head"]
    plugin.convert_module(net)  # converting again changes nothing
    assert plugin.fp8_layers == ["encoder.0", "encoder.2", "head"]
    assert len(engine.log["linear_init"]) == 3

    layer = nn.Linear(4, 3)
    converted = plugin.convert_module(layer)
    assert isinstance(converted, engine.Linear) and converted.weight is layer.weight


def test_recipe_reaches_fp8_autocast_inside_bf16_autocast(engine: types.SimpleNamespace) -> None:
    plugin = HPUPrecisionPlugin("fp8", fp8_recipe={"margin": 1, "interval": 4, "fp8_format": "hybrid"})
    assert engine.log["autocast"] == []
    with plugin.forward_context():
        assert torch.is_autocast_enabled("hpu")
        assert torch.get_autocast_dtype("hpu") == torch.bfloat16
        assert engine.state["fp8_active"]
    assert not engine.state["fp8_active"]
    (call,) = engine.log["autocast"]
    assert call["enabled"] is True
    recipe = call["fp8_recipe"]
    assert (recipe.margin, recipe.interval, recipe.fp8_format) == (1, 4, engine.recipe.Format.HYBRID)

    given = engine.recipe.DelayedScaling(margin=2)
    assert HPUPrecisionPlugin("fp8", fp8_recipe=given).fp8_recipe is given


@pytest.mark.parametrize(
    ("recipe", "error", "match"),
    [
        ({"fp8_format": "E3M4"}, ValueError, r"fp8_recipe\['fp8_format'\]='E3M4'` is not an fp8 format"),
        ({"margins": 1}, ValueError, r"`fp8_recipe=\{'margins': 1\}` is not valid for DelayedScaling"),
        ("E4M3", TypeError, "`fp8_recipe` must be a DelayedScaling recipe or a dict"),
    ],
)
def test_bad_recipe_is_refused(engine: types.SimpleNamespace, recipe: Any, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        HPUPrecisionPlugin("fp8", fp8_recipe=recipe)


# --- fp8 with the Trainer and Fabric (recording engine) ---------------------------------------------------------------


def _loader() -> DataLoader:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(64, 8, generator=generator)
    return DataLoader(TensorDataset(x, x @ torch.randn(8, 1, generator=generator)), batch_size=16)


def test_trainer_fp8_fit_with_accumulation_and_resume(engine: types.SimpleNamespace, tmp_path: Path) -> None:
    def trainer(epochs: int) -> Trainer:
        return quiet_trainer(
            tmp_path,
            accelerator="hpu",
            devices=1,
            plugins=[HPUPrecisionPlugin("fp8", fp8_recipe={"margin": 0, "interval": 1})],
            max_epochs=epochs,
            accumulate_grad_batches=2,
            enable_checkpointing=False,
        )

    model = TinyRegressor()
    first = trainer(3)
    first.fit(model, _loader())
    assert isinstance(model.net[0], engine.Linear) and isinstance(model.net[2], engine.Linear)
    assert model.net[0].fp8_calls == 12  # every training forward ran under fp8 autocast
    assert len(engine.log["autocast"]) == 12
    assert first.global_step == 6
    assert sum(model.losses[-4:]) < 0.8 * sum(model.losses[:4])

    ckpt = tmp_path / "fp8.ckpt"
    first.save_checkpoint(ckpt)
    resumed = TinyRegressor()
    second = trainer(4)
    second.fit(resumed, _loader(), ckpt_path=ckpt)
    assert second.global_step == 8
    assert isinstance(resumed.net[0], engine.Linear)


def test_fabric_fp8_keeps_the_optimizer_working(engine: types.SimpleNamespace) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)  # built before the conversion, as Fabric users do
    fabric = Fabric(accelerator="hpu", devices=1, plugins=[HPUPrecision("fp8")])
    model, optimizer = fabric.setup(model, optimizer)
    first_weight = model.module[0].weight.detach().clone()
    x = torch.randn(16, 8, device=fabric.device)
    for _ in range(3):
        optimizer.zero_grad()
        fabric.backward(model(x).float().pow(2).mean())
        optimizer.step()
    assert isinstance(model.module[0], engine.Linear)
    assert not torch.equal(model.module[0].weight, first_weight)
    assert engine.state["fp8_active"] is False and len(engine.log["autocast"]) == 3


# --- fp8 inference with Intel Neural Compressor (recording stand-in for INC) ------------------------------------------


def _config(tmp_path: Path, mode: str) -> Path:
    path = tmp_path / f"{mode.lower()}.json"
    path.write_text(json.dumps({"mode": mode, "dump_stats_path": str(tmp_path / "stats")}))
    return path


def test_inc_measure_then_quantize(standin: Any, inc: types.SimpleNamespace, tmp_path: Path) -> None:
    model = nn.Linear(4, 4)
    assert fp8_measure(model, _config(tmp_path, "MEASURE")) is model
    fp8_finish_measurement(model)
    assert fp8_quantize(model, str(_config(tmp_path, "QUANTIZE"))) is model
    assert [(name, target is model) for name, target, _ in inc.calls] == [
        ("prepare", True),
        ("finalize_calibration", True),
        ("convert", True),
    ]
    assert inc.calls[0][2].mode == "MEASURE" and inc.calls[2][2].mode == "QUANTIZE"
    assert inc.calls[2][2].dump_stats_path == str(tmp_path / "stats")
    config = inc.FP8Config(mode="QUANTIZE")
    fp8_quantize(model, config)
    assert inc.calls[-1][2] is config


def test_inc_bad_configs(standin: Any, inc: types.SimpleNamespace, tmp_path: Path) -> None:
    model = nn.Linear(4, 4)
    with pytest.raises(ValueError, match='set "mode": "MEASURE"'):
        fp8_measure(model, _config(tmp_path, "QUANTIZE"))
    with pytest.raises(FileNotFoundError, match="is not a file"):
        fp8_quantize(model, tmp_path / "missing.json")
    with pytest.raises(TypeError, match="`config` must be the path"):
        fp8_quantize(model, {"mode": "QUANTIZE"})
    assert inc.calls == []


def test_inc_missing_or_first_generation(standin: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "neural_compressor", None)  # makes the import fail, as when not installed
    with pytest.raises(HPUFeatureUnavailableError, match="fp8 inference needs Intel Neural Compressor"):
        fp8_measure(nn.Linear(4, 4), _config(tmp_path, "MEASURE"))
    monkeypatch.setattr(standin, "_device_name", "GAUDI")
    with pytest.raises(ValueError, match="fp8 precision needs Gaudi2 or later"):
        fp8_measure(nn.Linear(4, 4), _config(tmp_path, "MEASURE"))


# --- fp8 inference from the Trainer: the HPUFp8Inference callback (recording stand-in for INC) ------------------------


class _Scorer(LightningModule):
    """Records, at each test/predict batch, how many INC calls had happened."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Linear(4, 2)
        self.inc_calls_seen: list[int] = []
        self.inc: types.SimpleNamespace | None = None

    def test_step(self, batch: Any, batch_idx: int) -> None:
        assert self.inc is not None
        self.inc_calls_seen.append(len(self.inc.calls))

    def predict_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        assert self.inc is not None
        self.inc_calls_seen.append(len(self.inc.calls))
        return self.net(batch[0])


def _inference_trainer(root: Path, callback: HPUFp8Inference) -> Trainer:
    return quiet_trainer(root, accelerator="hpu", callbacks=[callback])


def test_fp8_inference_callback_measures_in_test_then_quantizes_in_predict(
    standin: Any, inc: types.SimpleNamespace, tmp_path: Path
) -> None:
    model = _Scorer()
    model.inc = inc
    loader = DataLoader(TensorDataset(torch.randn(6, 4)), batch_size=2)
    measure = HPUFp8Inference("measure")
    _inference_trainer(tmp_path, measure).test(model, loader)
    # Prepared before the first batch, measurement finished after the last one, on the module itself.
    assert model.inc_calls_seen == [1, 1, 1]
    assert [(name, target is model) for name, target, _ in inc.calls] == [
        ("prepare", True),
        ("finalize_calibration", True),
    ]
    prefix = str(tmp_path / "lightning_logs" / "fp8_stats" / "measure")  # the run's log root, without a logger too
    assert inc.calls[0][2].mode == "MEASURE" and inc.calls[0][2].dump_stats_path == prefix
    assert measure.resolved_config is not None
    assert json.loads(measure.resolved_config.read_text())["observer"] == "maxabs"  # the packaged config

    model.inc_calls_seen.clear()
    quantize = HPUFp8Inference("quantize")
    _inference_trainer(tmp_path, quantize).predict(model, loader)
    assert model.inc_calls_seen == [3, 3, 3]
    assert inc.calls[2][0] == "convert" and inc.calls[2][1] is model
    assert inc.calls[2][2].mode == "QUANTIZE" and inc.calls[2][2].dump_stats_path == prefix  # reads what was written
    assert quantize.resolved_config is not None
    assert json.loads(quantize.resolved_config.read_text())["scale_method"] == "maxabs_hw"


def test_fp8_inference_artefacts_stay_in_the_runs_directories(
    standin: Any, inc: types.SimpleNamespace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lightning.pytorch.loggers import CSVLogger

    workdir, root = tmp_path / "cwd", tmp_path / "root"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    loader = DataLoader(TensorDataset(torch.randn(4, 4)), batch_size=2)
    logger = CSVLogger(tmp_path / "logs", name="exp")
    trainer = Trainer(accelerator="hpu", default_root_dir=root, logger=logger, callbacks=[HPUFp8Inference("measure")])
    model = _Scorer()
    model.inc = inc
    trainer.test(model, loader, verbose=False)
    assert inc.calls[0][2].dump_stats_path == str(tmp_path / "logs" / "exp" / "fp8_stats" / "measure")
    # A run that fails (INC missing) writes nothing anywhere, and a Trainer's default root is not the stats' home.
    monkeypatch.setitem(sys.modules, "neural_compressor.torch.quantization", None)  # as when not installed
    failing = quiet_trainer(accelerator="hpu", callbacks=[HPUFp8Inference("measure")])
    with pytest.raises(HPUFeatureUnavailableError, match="fp8 inference needs Intel Neural Compressor"):
        failing.test(model, loader, verbose=False)
    assert list(workdir.iterdir()) == []


def test_fp8_inference_callback_checks_its_arguments(standin: Any, tmp_path: Path) -> None:
    for mode in ("measure", "quantize"):
        assert default_config(mode).is_file(), "the maxabs configs ship with the package"  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="use 'measure', then 'quantize'"):
        HPUFp8Inference("calibrate")  # type: ignore[arg-type]
    with pytest.raises(FileNotFoundError, match="is not a file"):
        HPUFp8Inference("measure", config=tmp_path / "missing.json")
    explicit = HPUFp8Inference("quantize", dump_stats_path=tmp_path / "stats")
    assert explicit.stats_prefix(_inference_trainer(tmp_path, explicit)) == tmp_path / "stats"


def test_fp8_inference_callback_under_deepspeed_inference(
    standin: Any, inc: types.SimpleNamespace, tmp_path: Path
) -> None:
    pytest.importorskip("deepspeed")
    from deepspeed.inference.engine import InferenceEngine

    from lightning_hpu import HPUDeepSpeedStrategy

    saved_environment = dict(os.environ)  # Lightning sets the rank variables for DeepSpeed
    try:
        model = _Scorer()
        model.inc = inc
        trainer = quiet_trainer(
            tmp_path,
            accelerator="hpu",
            strategy=HPUDeepSpeedStrategy(dtype=torch.float32),
            callbacks=[HPUFp8Inference("measure")],
        )
        predictions = trainer.predict(model, DataLoader(TensorDataset(torch.randn(4, 4)), batch_size=2))
        assert isinstance(trainer.strategy.model, InferenceEngine) and len(predictions) == 2
        # INC prepared the module the inference engine runs, before the first batch, and finished after the last.
        assert trainer.strategy.model.module is model and model.inc_calls_seen == [1, 1]
        assert [(name, target is model) for name, target, _ in inc.calls] == [
            ("prepare", True),
            ("finalize_calibration", True),
        ]
    finally:
        if torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()
        os.environ.clear()
        os.environ.update(saved_environment)
