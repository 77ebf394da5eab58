"""HPUDeepSpeedStrategy on the CPU stand-in: the seed's DeepSpeed examples, adapted only to the stand-in.

Single-process runs share this pytest process (DeepSpeed is imported once); each test restores the environment
variables Lightning sets for DeepSpeed and destroys the process group it created. One test starts two processes.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch

from tests.helpers.paths import ROOT

pytest.importorskip("deepspeed")

from lightning.pytorch import Trainer, seed_everything
from lightning.pytorch.plugins import DeepSpeedPrecision
from lightning.pytorch.strategies import StrategyRegistry
from lightning.pytorch.utilities.exceptions import MisconfigurationException

from gaudi_standin.emulator import machine as standin_runtime
from lightning_hpu import HPUAccelerator, HPUDeepSpeedStrategy
from lightning_hpu.runtime import bridge_emulated, get_backend
from tests.helpers.standin import reset_backend
from tests.helpers.trainer import quiet_trainer

EXAMPLE = ROOT / "examples" / "deepspeed_zero.py"
SEED_CONFIG = ROOT / "examples" / "deepspeed_bf16_zero2.json"


def _load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("deepspeed_zero_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


example = _load_example()


@pytest.fixture(scope="module", autouse=True)
def _one_process_group() -> Iterator[None]:
    """The single-process runs share one (world size 1) process group, as DeepSpeed caches its groups."""
    yield
    if torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


@pytest.fixture(autouse=True)
def _restore_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """Undo the rank variables Lightning sets for DeepSpeed, so no later test or child process inherits them."""
    saved = dict(os.environ)
    monkeypatch.chdir(tmp_path)
    yield
    os.environ.clear()
    os.environ.update(saved)


def _trainer(strategy: HPUDeepSpeedStrategy | str, **kwargs: object) -> Trainer:
    kwargs.setdefault("plugins", [DeepSpeedPrecision("bf16-mixed")])
    return quiet_trainer(accelerator=HPUAccelerator(), strategy=strategy, enable_checkpointing=False, **kwargs)


# --- names, connector, refusals (no training) ------------------------------------------------------
def test_registered_names_select_the_documented_zero_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    # Unset, as on a fresh Gaudi: the strategy sets it on its own.
    monkeypatch.delenv("DS_ACCELERATOR", raising=False)
    expected = {
        "hpu_deepspeed": (2, False, False),
        "hpu_deepspeed_stage_1": (1, False, False),
        "hpu_deepspeed_stage_2": (2, False, False),
        "hpu_deepspeed_stage_2_offload": (2, True, False),
        "hpu_deepspeed_stage_3": (3, False, False),
        "hpu_deepspeed_stage_3_offload": (3, True, True),
    }
    for name, (stage, offload_optimizer, offload_param) in expected.items():
        strategy = StrategyRegistry.get(name)
        assert isinstance(strategy, HPUDeepSpeedStrategy), name
        zero = strategy.config["zero_optimization"]
        assert zero["stage"] == stage, name
        assert ("offload_optimizer" in zero) == offload_optimizer, name
        assert ("offload_param" in zero) == offload_param, name
    nvme = StrategyRegistry["hpu_deepspeed_stage_3_offload_nvme"]["init_params"]
    assert nvme["stage"] == 3
    assert nvme["offload_params_device"] == nvme["offload_optimizer_device"] == nvme["remote_device"] == "nvme"
    # Through the connector: "deepspeed" means the HPU twin, and precision= gives Lightning's DeepSpeed precision.
    trainer = Trainer(accelerator="hpu", strategy="deepspeed", precision="bf16-mixed", logger=False)
    assert isinstance(trainer.strategy, HPUDeepSpeedStrategy)
    assert isinstance(trainer.precision_plugin, DeepSpeedPrecision)
    assert trainer.precision_plugin.precision == "bf16-mixed"
    # DeepSpeed chose the HPU (on the stand-in, its hpu accelerator); DS_ACCELERATOR was set only while it chose.
    from deepspeed.accelerator import get_accelerator

    assert get_accelerator().device_name() == "hpu" and "DS_ACCELERATOR" not in os.environ


def test_refuses_what_the_device_cannot_run(standin: object, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # fp16 is refused on a first-generation Gaudi, for training and for inference, when the Trainer is built.
    monkeypatch.setenv("LIGHTNING_HPU_CPU_DEVICE_NAME", "GAUDI")
    from tests.helpers.standin import reset_backend

    reset_backend()
    with pytest.raises(ValueError, match="fp16 precision needs Gaudi2"):
        Trainer(accelerator="hpu", strategy="hpu_deepspeed", precision="16-mixed", logger=False)
    with pytest.raises(ValueError, match="fp16 precision needs Gaudi2"):
        _trainer(HPUDeepSpeedStrategy(dtype=torch.float16))
    _trainer(HPUDeepSpeedStrategy(stage=3))  # bf16 and ZeRO-3 are fine on Gaudi
    # On Gaudi2, fp16 is accepted; ZeRO-3 gets the seed's warning; NVMe offload needs an existing directory.
    monkeypatch.setenv("LIGHTNING_HPU_CPU_DEVICE_NAME", "GAUDI2")
    reset_backend()
    _trainer(HPUDeepSpeedStrategy(), plugins=[DeepSpeedPrecision("16-mixed")])
    with pytest.warns(UserWarning, match="ZeRO stage 3 on Gaudi2"):
        _trainer(HPUDeepSpeedStrategy(stage=3))
    nvme = {"offload_optimizer": True, "offload_optimizer_device": "nvme"}
    with pytest.raises(ValueError, match="nvme_path='/no/such/dir'"):
        _trainer(HPUDeepSpeedStrategy(stage=2, nvme_path="/no/such/dir", **nvme))
    _trainer(HPUDeepSpeedStrategy(stage=2, nvme_path=str(tmp_path), **nvme))
    nvme_preset = StrategyRegistry["hpu_deepspeed_stage_3_offload_nvme"]["init_params"]
    with pytest.warns(UserWarning, match="NVMe offload with DeepSpeed ZeRO stage 3 is not verified"):
        _trainer(HPUDeepSpeedStrategy(**nvme_preset, nvme_path=str(tmp_path)))
    # Tensor parallelism needs Gaudi2 or later.
    monkeypatch.setenv("LIGHTNING_HPU_CPU_DEVICE_NAME", "GAUDI")
    reset_backend()
    with pytest.raises(ValueError, match=r"tensor parallelism .* needs Gaudi2"):
        _trainer(HPUDeepSpeedStrategy(tensor_parallel={"tp_size": 2}))
    _trainer(HPUDeepSpeedStrategy(tensor_parallel={"tp_size": 1}))
    # `parallel_devices` as the docs write it (HPUs or a count) must agree with the Trainer's devices.
    trainer = _trainer(HPUDeepSpeedStrategy(parallel_devices=[torch.device("hpu")]), devices=1)
    assert trainer.strategy.parallel_devices == [get_backend().torch_device()]
    with pytest.raises(ValueError, match=r"names 2 HPUs but the Trainer uses 1: pass `Trainer\(devices=2\)`"):
        _trainer(HPUDeepSpeedStrategy(parallel_devices=[torch.device("hpu")] * 2), devices=1)
    with pytest.raises(ValueError, match="`parallel_devices` must be HPUs, got cuda"):
        HPUDeepSpeedStrategy(parallel_devices=[torch.device("cuda")])
    # Without `devices=`, the strategy's `parallel_devices` set the count (as Lightning's), not all visible HPUs.
    monkeypatch.setenv("LIGHTNING_HPU_CPU_DEVICES", "2")
    reset_backend()
    assert _trainer(HPUDeepSpeedStrategy(parallel_devices=[torch.device("hpu")])).num_devices == 1
    # A DS_ACCELERATOR that is not the backend's is refused before DeepSpeed could use it.
    monkeypatch.setenv("DS_ACCELERATOR", "cuda")
    with pytest.raises(ValueError, match="DS_ACCELERATOR='cuda' cannot drive an HPU"):
        HPUDeepSpeedStrategy()


# --- training --------------------------------------------------------------------------------------
@pytest.mark.parametrize("stage", [1, 2, 3])
def test_zero_stage_in_bf16_decreases_the_loss(stage: int, lazy_mode: None) -> None:
    steps = 16
    model = example.main(["--stage", str(stage), "--max-steps", str(steps)])
    engine = model.trainer.strategy.deepspeed_engine
    assert engine.zero_optimization_stage() == stage
    assert engine.bfloat16_enabled()
    assert next(engine.module.parameters()).dtype == torch.bfloat16
    assert len(model.losses) == steps
    assert sum(model.losses[-4:]) < 0.5 * sum(model.losses[:4])
    # A lazy step is marked after every DeepSpeed backward and every DeepSpeed optimizer step.
    if bridge_emulated():
        assert standin_runtime.current().counters.mark_steps == 2 * steps


def test_fp16_trains_under_deepspeed_where_the_generation_supports_it(
    standin: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DeepSpeed asks its accelerator whether fp16 runs: the emulated generation answers, as the bridge does, not the
    host CPU (whose DeepSpeed accelerator says no without AVX512-FP16)."""
    from deepspeed.accelerator import get_accelerator

    model = example.RegressionModel()
    trainer = _trainer(HPUDeepSpeedStrategy(stage=2), plugins=[DeepSpeedPrecision("16-mixed")], max_steps=2)
    trainer.fit(model, example.dataloader())
    assert trainer.strategy.deepspeed_engine.fp16_enabled()
    assert get_accelerator().is_fp16_supported() and torch.half in get_accelerator().supported_dtypes()
    monkeypatch.setenv("LIGHTNING_HPU_CPU_DEVICE_NAME", "GAUDI")
    reset_backend()
    assert not get_accelerator().is_fp16_supported() and torch.half not in get_accelerator().supported_dtypes()


def test_module_optimizer_wins_over_the_config_optimizer() -> None:
    config = {
        "zero_optimization": {"stage": 2},
        "zero_allow_untested_optimizer": True,
        "optimizer": {"type": "RMSprop", "params": {"lr": 0.5}},
    }
    model = example.RegressionModel()
    trainer = _trainer(HPUDeepSpeedStrategy(config=config), max_steps=1)
    trainer.fit(model, example.dataloader())
    assert isinstance(trainer.strategy.deepspeed_engine.basic_optimizer, torch.optim.SGD)
    assert model.lrs == [model.lr]


def test_a_module_without_an_optimizer_is_refused_in_one_sentence() -> None:
    class NoOptimizer(example.RegressionModel):
        def configure_optimizers(self) -> None:  # type: ignore[override]
            return None

    trainer = _trainer(HPUDeepSpeedStrategy(stage=2), max_steps=1)
    with pytest.raises(MisconfigurationException, match=r"`configure_optimizers` returned no optimizer; return one"):
        trainer.fit(NoOptimizer(), example.dataloader())


@pytest.mark.parametrize("stage", [2, 3])
def test_save_then_resume_continues_from_the_same_loss(stage: int, tmp_path: Path) -> None:
    def run(max_epochs: int, ckpt_path: Path | None = None) -> tuple[Trainer, list[float]]:
        seed_everything(0)
        model = example.RegressionModel()
        trainer = quiet_trainer(
            accelerator="hpu",
            strategy=f"hpu_deepspeed_stage_{stage}",
            precision="bf16-mixed",
            max_epochs=max_epochs,
            enable_checkpointing=False,
        )
        trainer.fit(model, example.dataloader(samples=32), ckpt_path=ckpt_path)
        return trainer, model.losses

    _, straight = run(max_epochs=2)
    first, losses = run(max_epochs=1)
    assert losses == straight[:4]
    checkpoint = tmp_path / "ds.ckpt"
    first.save_checkpoint(checkpoint)
    assert (checkpoint / "checkpoint").is_dir()  # DeepSpeed's own format
    _, resumed = run(max_epochs=2, ckpt_path=checkpoint)
    assert resumed == pytest.approx(straight[4:], rel=1e-6)
    assert resumed != pytest.approx(straight[:4], rel=1e-3)


def test_activation_checkpointing_gives_the_same_gradients() -> None:
    """The seed's activation checkpointing example (ZeRO-3, optimizer offload, CPU checkpointing) in fp32."""
    import deepspeed

    def weights_after_one_step(checkpointing: bool) -> tuple[dict[str, torch.Tensor], int]:
        seed_everything(0)
        model = example.RegressionModel(activation_checkpointing=checkpointing)
        calls = []
        model.l2.register_forward_hook(lambda *_: calls.append(1))
        strategy = HPUDeepSpeedStrategy(zero_optimization=True, stage=3, offload_optimizer=True, cpu_checkpointing=True)
        assert strategy.config is not None
        strategy.config["zero_force_ds_cpu_optimizer"] = False  # a torch optimizer: no compiled CPU Adam in tests
        trainer = _trainer(strategy, plugins=[DeepSpeedPrecision("32-true")], max_steps=1)
        trainer.fit(model, example.dataloader())
        assert strategy.config["activation_checkpointing"]["partition_activations"]  # what CPU checkpointing needs
        params = list(model.parameters())
        with deepspeed.zero.GatheredParameters(params):
            weights = {name: p.detach().clone() for name, p in model.named_parameters()}
        return weights, len(calls)

    plain, plain_calls = weights_after_one_step(checkpointing=False)
    checkpointed, checkpointed_calls = weights_after_one_step(checkpointing=True)
    assert (plain_calls, checkpointed_calls) == (1, 2)  # the checkpointed layer ran again in backward
    seed_everything(0)
    initial = example.RegressionModel().state_dict()
    for name, weight in plain.items():
        assert not torch.equal(weight, initial[name]), name  # the step changed it: its gradient was not zero
        torch.testing.assert_close(checkpointed[name], weight, rtol=0, atol=0)


# --- inference -------------------------------------------------------------------------------------
def test_predict_with_deepspeed_inference_from_arguments_and_config() -> None:
    from deepspeed import DeepSpeedEngine
    from deepspeed.inference.engine import InferenceEngine

    seed_everything(0)
    model = example.RegressionModel()
    batches = example.dataloader(samples=16)
    with torch.no_grad():
        expected = torch.cat([model(x) for x, _ in batches])
    settings = {"tensor_parallel": {"tp_size": 1}, "dtype": torch.float, "enable_cuda_graph": False}
    kwargs = {**settings, "replace_with_kernel_inject": False, "injection_policy": {type(model): ("l1",)}}
    strategies = [
        (InferenceEngine, HPUDeepSpeedStrategy(parallel_devices=1, **kwargs)),  # the docs pass a device count
        (InferenceEngine, HPUDeepSpeedStrategy(config=dict(settings))),
        (DeepSpeedEngine, HPUDeepSpeedStrategy()),  # no inference settings: Lightning's optimizer-less engine
    ]
    for engine_type, strategy in strategies:
        assert strategy.config is not None and "dtype" not in strategy.config  # not for the training engine
        trainer = _trainer(strategy, plugins=[DeepSpeedPrecision("32-true")])
        predictions = trainer.predict(model, batches)
        assert isinstance(trainer.strategy.model, engine_type)
        assert predictions is not None
        torch.testing.assert_close(torch.cat(predictions), expected)  # type: ignore[arg-type]


def test_fp32_inference_weights_with_a_mixed_precision_compute_in_its_dtype() -> None:
    """The docs' settings: init_inference(dtype=torch.float) with precision='bf16-mixed' predicts in bf16."""
    from deepspeed.inference.engine import InferenceEngine

    seed_everything(0)
    model = example.RegressionModel()
    batches = example.dataloader(samples=16)
    with torch.no_grad():
        expected = torch.cat([model(x) for x, _ in batches])
    strategy = HPUDeepSpeedStrategy(tensor_parallel={"tp_size": 1}, dtype=torch.float, replace_with_kernel_inject=False)
    trainer = _trainer(strategy, plugins=[DeepSpeedPrecision("bf16-mixed")])
    predictions = trainer.predict(model, batches)
    assert isinstance(trainer.strategy.model, InferenceEngine)
    assert predictions is not None and all(p.dtype == torch.bfloat16 for p in predictions)  # computed in bf16 ...
    assert next(model.parameters()).dtype == torch.float32  # ... from the fp32 weights
    torch.testing.assert_close(torch.cat(predictions).float(), expected, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize(
    ("dtype", "precision", "inputs"),
    [
        (torch.bfloat16, "32-true", "torch.float32"),
        (torch.float16, "bf16-mixed", "torch.bfloat16"),
        (torch.float32, "bf16-true", "torch.bfloat16"),
    ],
)
def test_inference_dtype_the_precision_cannot_feed_is_refused_when_the_trainer_is_built(
    dtype: torch.dtype, precision: str, inputs: str
) -> None:
    message = (
        rf"^DeepSpeed inference `dtype={dtype}` cannot run with precision='{precision}', which feeds {inputs} inputs"
        rf" to the {dtype} weights: pass dtype={inputs} \(or leave dtype out\)"
    )
    with pytest.raises(ValueError, match=message):
        _trainer(HPUDeepSpeedStrategy(dtype=dtype), plugins=[DeepSpeedPrecision(precision)])


# --- two processes ---------------------------------------------------------------------------------
@pytest.mark.multiprocess
def test_two_process_zero2_seed_config_leaves_identical_replicated_weights(
    tmp_path: Path, python_executable: str
) -> None:
    """The seed's JSON config (bf16, ZeRO-2, WarmupDecayLR, gradient accumulation 2) on two emulated HPUs."""
    env = {
        **os.environ,
        "LIGHTNING_HPU_BACKEND": "cpu",
        "LIGHTNING_HPU_CPU_DEVICES": "2",
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    command = [python_executable, str(EXAMPLE), "--config", str(SEED_CONFIG), "--devices", "2"]
    command += ["--accumulate-grad-batches", "2", "--max-steps", "4", "--out", str(tmp_path)]
    try:
        done = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=240)
    except subprocess.TimeoutExpired as error:
        pytest.fail(f"the 2-process run hung; its output:\n{error.stdout!r}\n{error.stderr!r}")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    ranks = [torch.load(tmp_path / f"rank{rank}.pt") for rank in (0, 1)]
    assert ranks[0]["losses"] != ranks[1]["losses"]  # each rank trained on its own half of the data ...
    for name, weight in ranks[0]["weights"].items():  # ... and the all-reduced updates kept them equal
        assert not torch.equal(weight, ranks[0]["initial"][name]), name
        assert torch.equal(weight, ranks[1]["weights"][name]), name
    # The logged loss is the mean over both ranks (HCCL has no AVG: the strategy reduces with SUM).
    mean = (ranks[0]["losses"][-1] + ranks[1]["losses"][-1]) / 2
    assert ranks[0]["logged"] == ranks[1]["logged"] == pytest.approx(mean, rel=1e-5)
    # 8 micro-batches, 4 optimizer steps: the config's WarmupDecayLR warms up, stepping once per 2 micro-batches.
    lrs = ranks[0]["lrs"]
    assert len(lrs) == 8
    assert lrs[0::2] == lrs[1::2]
    assert lrs[0::2] == sorted(lrs[0::2])
    assert lrs[0] == pytest.approx(0.02) and lrs[0] < lrs[6] <= 0.05


# --- fp8 under DeepSpeed (the recording engine of tests/helpers/fp8_recorders.py)
# -----------------------------------
def test_transformer_engine_under_deepspeed_trains_the_engine_layers_in_fp8(
    standin: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lightning_hpu import HPUDeepSpeedPrecisionPlugin
    from tests.helpers.fp8_recorders import make_fake_engine

    te = make_fake_engine()
    monkeypatch.setattr(standin, "transformer_engine", lambda: te)
    model = example.RegressionModel()
    first_weight = model.l1.weight
    trainer = _trainer("deepspeed", plugins=None, precision="transformer-engine", max_steps=3)
    plugin = trainer.precision_plugin
    assert isinstance(plugin, HPUDeepSpeedPrecisionPlugin)
    # Lightning's name keeps Lightning's meaning: DeepSpeed's bf16 with bf16 weights, the engine's layers in fp8.
    assert plugin.fp8 is not None and plugin.fp8.precision == "transformer-engine" and plugin.precision == "bf16-true"
    trainer.fit(model, example.dataloader())
    # The engine's layers replaced nn.Linear, keeping the module's own parameters; DeepSpeed ran them in bf16.
    assert isinstance(model.l1, te.Linear) and isinstance(model.l2[1], te.Linear)
    assert model.l1.weight is first_weight and first_weight.dtype == torch.bfloat16
    assert trainer.strategy.deepspeed_engine.bfloat16_enabled()
    # Each training step's forward ran inside the engine's fp8 autocast, with the plugin's recipe.
    assert len(te.log["autocast"]) == 3 and all(call["enabled"] for call in te.log["autocast"])
    assert te.log["autocast"][0]["fp8_recipe"] is plugin.fp8.fp8_recipe
    assert model.l1.fp8_calls == 3 and model.l2[1].fp8_calls == 3
    assert not te.state["fp8_active"]


def test_deepspeed_precision_arguments_need_fp8(standin: Any) -> None:
    from lightning_hpu import HPUDeepSpeedPrecisionPlugin

    with pytest.raises(ValueError, match="apply to precision='fp8' only"):
        HPUDeepSpeedPrecisionPlugin("bf16-mixed", fp8_recipe={"margin": 1})
