"""Eager mode and torch.compile on the stand-in: hpu_backend, HPUCompile, the recompilation monitor, throughput."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
import torch
from lightning.pytorch import LightningModule, Trainer
from torch import nn
from torch._dynamo.utils import counters

from gaudi_standin.compiler.hpu_backend import register_hpu_backend
from lightning_hpu import HPUCompile, HPUGraphs, HPURecompileMonitor, HPUThroughputMonitor
from lightning_hpu.compile import CompileInLazyModeError
from lightning_hpu.pytorch.callbacks import HPUCompileError
from tests.helpers.dynamo import reset_dynamo
from tests.helpers.models import Block, BlockModel, RegressionModel
from tests.helpers.paths import EXAMPLES
from tests.helpers.standin import counters as standin_counters
from tests.helpers.trainer import MetricsSpy, quiet_trainer, rank_zero_lines


@pytest.fixture(autouse=True)
def _fresh_dynamo() -> None:
    reset_dynamo()


def _trainer(tmp_path: Any, **kwargs: Any) -> Trainer:
    return quiet_trainer(tmp_path, accelerator="hpu", enable_checkpointing=False, **kwargs)


def test_eager_is_the_default(standin: Any) -> None:
    assert not standin.is_lazy()


def test_hpu_backend_compiles_with_real_dynamo(standin: Any) -> None:
    model = torch.compile(nn.Linear(4, 2), backend="hpu_backend")
    before = standin_counters().compiled_graphs
    expected = nn.functional.linear(torch.ones(3, 4), model.weight, model.bias)
    torch.testing.assert_close(model(torch.ones(3, 4)), expected)
    assert standin_counters().compiled_graphs == before + 1
    graphs = counters["stats"]["unique_graphs"]
    model(torch.ones(3, 4))
    assert counters["stats"]["unique_graphs"] == graphs  # guards hold: no recompilation
    register_hpu_backend()  # idempotent


def test_hpu_backend_refuses_unknown_options(standin: Any) -> None:
    model = torch.compile(nn.Linear(4, 2), backend="hpu_backend", options={"max_autotune": True})
    # The stand-in's backend patches the bridge's config with the options, which refuses a key it does not have.
    with pytest.raises(Exception, match=r"hpu_backend(.|\n)*compile_backend\.config\.max_autotune does not exist"):
        model(torch.ones(3, 4))
    with pytest.raises(ValueError, match="max_autotune"):
        HPUCompile(options={"max_autotune": True})


def test_compile_refused_in_lazy_mode(lazy_standin: Any, tmp_path: Any) -> None:
    with pytest.raises(Exception, match=r"needs eager mode.*PT_HPU_LAZY_MODE=0"):
        torch.compile(nn.Linear(4, 2), backend="hpu_backend")(torch.ones(3, 4))
    with pytest.raises(CompileInLazyModeError, match="PT_HPU_LAZY_MODE=0"):
        _trainer(tmp_path, max_steps=1, callbacks=[HPUCompile()]).fit(BlockModel())
    # A model compiled by the user is refused when the fit sets up, before any training step runs.
    trainer = _trainer(tmp_path, max_steps=1)
    with pytest.raises(CompileInLazyModeError, match=r"^torch.compile\(backend='hpu_backend'\) needs eager mode"):
        trainer.fit(torch.compile(BlockModel(log=False), backend="hpu_backend"))
    assert trainer.global_step == 0 and standin_counters().compiled_graphs == 0


def test_compiled_lightning_module_fits_and_checkpoints_load_uncompiled(standin: Any, tmp_path: Any) -> None:
    model = BlockModel(log=False)  # self.log inside a Lightning-compiled training_step fails in Dynamo (README)
    trainer = _trainer(tmp_path, max_steps=3)
    before = standin_counters().compiled_graphs
    trainer.fit(torch.compile(model, backend="hpu_backend"))
    assert trainer.global_step == 3
    assert standin_counters().compiled_graphs > before
    trainer.save_checkpoint(tmp_path / "compiled.ckpt")
    state = torch.load(tmp_path / "compiled.ckpt", weights_only=False)["state_dict"]
    assert not any("_orig_mod" in key for key in state)
    plain = BlockModel.load_from_checkpoint(tmp_path / "compiled.ckpt")
    torch.testing.assert_close(plain.head.weight, model.head.weight)


def test_hpu_compile_keeps_self_log_and_plain_checkpoints(standin: Any, tmp_path: Any) -> None:
    model = BlockModel()
    trainer = _trainer(tmp_path, max_steps=3, callbacks=[HPUCompile()], logger=True)
    before = standin_counters().compiled_graphs
    trainer.fit(model)
    assert standin_counters().compiled_graphs > before
    assert "train_loss" in trainer.callback_metrics
    assert model._compiled_call_impl is None  # restored after fit
    trainer.save_checkpoint(tmp_path / "a.ckpt")
    state = torch.load(tmp_path / "a.ckpt", weights_only=False)["state_dict"]
    assert set(state) == set(BlockModel().state_dict())


@pytest.mark.parametrize("precision", ["32-true", "bf16-mixed"])
def test_regional_compilation_does_not_grow_with_depth(standin: Any, tmp_path: Any, precision: str) -> None:
    graphs = {}
    for depth in (2, 6):
        reset_dynamo()
        start = counters["stats"]["unique_graphs"]
        compile_blocks = HPUCompile(modules=[Block])
        trainer = _trainer(tmp_path, max_steps=4, precision=precision, callbacks=[compile_blocks])
        trainer.fit(
            BlockModel(depth=depth),
        )
        graphs[depth] = counters["stats"]["unique_graphs"] - start
    assert graphs[2] == graphs[6] > 0


def test_hpu_compile_named_submodules_and_gradient_accumulation(standin: Any, tmp_path: Any) -> None:
    model = BlockModel()
    compiler = HPUCompile(modules=["head", "blocks.1"])
    seen: list[int] = []

    class Spy(HPURecompileMonitor):
        def on_train_batch_start(self, trainer: Trainer, pl_module: LightningModule, batch: Any, i: int) -> None:
            seen.append(len(compiler.compiled))
            super().on_train_batch_start(trainer, pl_module, batch, i)

    _trainer(tmp_path, max_steps=2, accumulate_grad_batches=2, callbacks=[compiler, Spy()]).fit(model)
    assert seen and set(seen) == {2}
    with pytest.raises(ValueError, match="no submodule 'nope'"):
        _trainer(tmp_path, max_steps=1, callbacks=[HPUCompile(modules=["nope"])]).fit(BlockModel())


def test_hpu_compile_argument_checks() -> None:
    with pytest.raises(TypeError, match="must be a list"):
        HPUCompile(modules="blocks")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"names .* or torch.nn.Module subclasses"):
        HPUCompile(modules=[3])  # type: ignore[list-item]


def test_hpu_compile_refusals(standin: Any, tmp_path: Any) -> None:
    with pytest.raises(HPUCompileError, match="HPUGraphs cannot be used together"):
        _trainer(tmp_path, max_steps=1, callbacks=[HPUCompile(), HPUGraphs()]).fit(BlockModel())
    with pytest.raises(HPUCompileError, match="Trainer uses CPUAccelerator"):
        quiet_trainer(tmp_path, accelerator="cpu", max_steps=1, callbacks=[HPUCompile()]).fit(BlockModel())


def _monitored_fit(
    tmp_path: Any, compile_model: bool, dynamic: bool | None = False, **model_kwargs: Any
) -> tuple[HPURecompileMonitor, list[Any]]:
    monitor = HPURecompileMonitor(warmup_steps=3)
    callbacks: list[Any] = [monitor, HPUCompile(dynamic=dynamic)] if compile_model else [monitor]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _trainer(tmp_path, max_steps=8, callbacks=callbacks).fit(BlockModel(**model_kwargs))
    return monitor, [w for w in caught if "HPURecompileMonitor" in str(w.message)]


def test_monitor_eager_compile_fixed_shapes(standin: Any, tmp_path: Any) -> None:
    monitor, warned = _monitored_fit(tmp_path, compile_model=True)
    assert len(monitor.per_step) == 8
    assert monitor.per_step[0] >= 1 and sum(monitor.per_step[3:]) == 0
    assert monitor.total == sum(monitor.per_step)
    assert not warned


def test_monitor_eager_compile_changing_shapes_warns_once(standin: Any, tmp_path: Any) -> None:
    monitor, warned = _monitored_fit(tmp_path, compile_model=True, vary=True)
    assert sum(monitor.per_step[3:]) > 0
    assert len(warned) == 1
    assert "training step 3" in str(warned[0].message) and "size mismatch" in str(warned[0].message)


def test_monitor_counts_a_recipe_per_shape_when_dynamo_goes_dynamic(standin: Any, tmp_path: Any) -> None:
    # dynamic=None: Dynamo makes the changing size symbolic and stops recompiling, but the device's graph compiler
    # builds a recipe for every new shape, so compilations go on and the monitor warns.
    monitor, warned = _monitored_fit(tmp_path, compile_model=True, dynamic=None, vary=True)
    assert all(count >= 1 for count in monitor.per_step[:7])  # sizes 1..7: each a new recipe
    assert len(warned) == 1 and "training step 3" in str(warned[0].message)
    assert standin_counters().compiled_recipes >= 7
    fixed, quiet = _monitored_fit(tmp_path, compile_model=True, dynamic=None)
    assert sum(fixed.per_step[3:]) == 0 and not quiet


def test_monitor_survives_dynamo_reset(standin: Any, tmp_path: Any) -> None:
    class ResetEachStep(HPURecompileMonitor):
        def on_train_batch_start(self, trainer: Trainer, pl_module: LightningModule, batch: Any, i: int) -> None:
            torch._dynamo.reset()  # drops callbacks and caches: every step compiles again
            super().on_train_batch_start(trainer, pl_module, batch, i)

    monitor = ResetEachStep(warmup_steps=100)
    _trainer(tmp_path, max_steps=3, callbacks=[monitor, HPUCompile()]).fit(BlockModel())
    assert all(count >= 1 for count in monitor.per_step)


def test_monitor_lazy_mode_models_the_graph_cache(lazy_standin: Any, tmp_path: Any) -> None:
    monitor, warned = _monitored_fit(tmp_path, compile_model=False)
    assert monitor.per_step[0] >= 1 and sum(monitor.per_step[3:]) == 0
    assert standin_counters().lazy_graph_cache_hits > 0
    assert not warned
    monitor, warned = _monitored_fit(tmp_path, compile_model=False, vary=True)
    assert all(count >= 1 for count in monitor.per_step[:7])  # sizes 1..7: each a new graph
    assert len(warned) == 1 and "new input shape" in str(warned[0].message)


def test_monitor_costs_nothing_when_absent(lazy_standin: Any, tmp_path: Any) -> None:
    _trainer(tmp_path, max_steps=3).fit(BlockModel())
    assert standin_counters().lazy_graph_compilations == 0
    assert standin_counters().lazy_graph_cache_hits == 0


def test_monitor_logs_compilations(standin: Any, tmp_path: Any) -> None:
    monitor = HPURecompileMonitor()
    trainer = _trainer(tmp_path, max_steps=2, callbacks=[monitor, HPUCompile()], logger=True, log_every_n_steps=1)
    trainer.fit(BlockModel())
    assert "hpu/compilations" in trainer.logged_metrics
    with pytest.raises(ValueError, match="warmup_steps"):
        HPURecompileMonitor(warmup_steps=-1)


def test_throughput_monitor_synchronizes_and_skips_warmup(standin: Any, tmp_path: Any) -> None:
    monitor = HPUThroughputMonitor(batch_size_fn=lambda batch: batch[0].shape[0], warmup_steps=2, window_size=2)
    syncs = standin_counters().synchronizes
    model = RegressionModel()
    model.flops_per_batch = 10  # type: ignore[attr-defined]
    spy = MetricsSpy()
    trainer = _trainer(tmp_path, max_steps=6, limit_val_batches=0, callbacks=[monitor], log_every_n_steps=1, logger=spy)
    trainer.fit(model)
    assert standin_counters().synchronizes >= syncs + 6
    batches = [m["train/batches"] for m in spy.metrics if "train/batches" in m]
    assert batches == [1, 2, 3, 4]  # 6 steps, the first 2 left out
    assert any("train/device/samples_per_sec" in m for m in spy.metrics)


@pytest.fixture
def hpu_lines() -> Iterator[list[str]]:
    """The "HPU available" lines logged through Lightning's rank-zero logger (the one its GPU/TPU lines use)."""
    with rank_zero_lines("HPU available") as lines:
        yield lines


def test_startup_line_names_hpu(standin: Any, tmp_path: Any, hpu_lines: list[str]) -> None:
    _trainer(tmp_path)
    quiet_trainer(tmp_path, accelerator="cpu")
    assert hpu_lines == [
        "HPU available: True (GAUDI2, eager, CPU stand-in), using: 1 HPU",
        "HPU available: True (GAUDI2, eager, CPU stand-in), using: 0 HPUs",
    ]


def test_no_startup_line_where_no_hpu_is_expected(no_hpu: None, tmp_path: Any, hpu_lines: list[str]) -> None:
    """A CPU or CUDA machine where lightning-hpu is merely installed sees Lightning's own lines only."""
    quiet_trainer(tmp_path, accelerator="cpu")
    assert hpu_lines == []


def test_startup_line_on_a_gaudi_without_visible_hpus(
    no_hpu: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Any, hpu_lines: list[str]
) -> None:
    monkeypatch.setattr("lightning_hpu.runtime.bridge_installed", lambda: True)
    monkeypatch.setattr("lightning_hpu.integration.device_info_line.get_backend", lambda: None)
    quiet_trainer(tmp_path, accelerator="cpu")
    assert hpu_lines == ["HPU available: False, using: 0 HPUs"]


def test_compile_example_runs_on_the_standin(python_executable: str) -> None:
    example = EXAMPLES / "compile.py"
    args = ["--max-epochs", "1", "--samples", "70", "--depth", "2", "--precision", "32-true"]
    env = {**os.environ, "LIGHTNING_HPU_BACKEND": "cpu"}
    env.pop("PT_HPU_LAZY_MODE", None)
    result = subprocess.run(
        [python_executable, str(example), *args], capture_output=True, text=True, env=env, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "after_warmup=0" in result.stdout
    assert "HPU available: True (GAUDI2, eager, CPU stand-in), using: 1 HPU" in result.stderr


def test_bridge_counts_lazy_compilations_with_its_graph_compilation_metric(monkeypatch: pytest.MonkeyPatch) -> None:
    import types

    from lightning_hpu.runtime import require_backend
    from tests.helpers.recording_bridge import install_recording_bridge
    from tests.helpers.standin import reset_backend

    install_recording_bridge(monkeypatch, [])
    asked: list[str] = []
    stats = [[("TotalNumber", 3), ("TotalTime", 10)]]
    metric = types.SimpleNamespace(stats=lambda: stats[0])

    @contextlib.contextmanager
    def metric_localcontext(name: str) -> Iterator[Any]:
        asked.append(name)
        yield metric

    metrics = types.ModuleType("habana_frameworks.torch.hpu.metrics")
    metrics.metric_localcontext = metric_localcontext  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "habana_frameworks.torch.hpu.metrics", metrics)
    monkeypatch.delenv("LIGHTNING_HPU_BACKEND", raising=False)
    reset_backend()
    backend = require_backend()
    backend.watch_graph_compilations(True)  # lazy mode: the bridge's local metric counts while watched
    assert backend.graph_compilation_count() == 3
    stats[0] = [("TotalNumber", 5)]
    assert backend.graph_compilation_count() == 5
    backend.watch_graph_compilations(False)
    stats[0] = [("TotalNumber", 2)]
    backend.watch_graph_compilations(True)  # a new window adds to what the closed ones counted
    assert backend.graph_compilation_count() == 7
    assert asked == ["graph_compilation", "graph_compilation"]
