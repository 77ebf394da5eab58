"""HPUProfiler: traces and reports per rank, custom actions, short runs, activities, summary, HABANA_PROFILE, CLI."""

from __future__ import annotations

import enum
import json
import logging
import os
import re
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from lightning.pytorch import LightningModule, Trainer
from lightning.pytorch.profilers.pytorch import ProfilerActivity as LightningsProfilerActivity
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from lightning_hpu import HPUProfiler
from lightning_hpu.pytorch.profilers.steps import planned_steps
from lightning_hpu.runtime.bridge import BridgeBackend
from tests.helpers.paths import ROOT
from tests.helpers.processes import free_port
from tests.helpers.trainer import quiet_trainer

MATMUL_OPS = {"aten::addmm", "aten::mm", "aten::matmul", "aten::linear"}


class MatmulModel(LightningModule):
    """Dominated by one 2048x2048 matmul; marks one custom action with ``profile`` and one with ``start``/``stop``."""

    def __init__(self, profiler: HPUProfiler) -> None:
        super().__init__()
        self.profiler = profiler
        self.layer = nn.Linear(2048, 2048)
        self.steps_run = 0

    def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
        self.steps_run += 1
        with self.profiler.profile("custom_block"):
            y = self.layer(batch[0])
        self.profiler.start("custom_granular")
        loss = y.pow(2).mean()
        self.profiler.stop("custom_granular")
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.01)


def _fit(profiler: HPUProfiler, max_steps: int, **trainer_kwargs: Any) -> MatmulModel:
    model = MatmulModel(profiler)
    trainer = quiet_trainer(max_steps=max_steps, profiler=profiler, enable_checkpointing=False, **trainer_kwargs)
    data = DataLoader(TensorDataset(torch.randn(8 * 256, 2048)), batch_size=256)  # 8 batches an epoch
    trainer.fit(model, data)
    return model


def _traces(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.pt.trace.json"))


def _worker(trace: Path) -> str:
    """The worker name TensorBoard reads from a trace file's name (the part before ``.<timestamp>.pt.trace.json``)."""
    return re.sub(r"\.\d+\.pt\.trace\.json$", "", trace.name)


def _event_names(trace: Path) -> set[str]:
    document = json.loads(trace.read_text())
    assert isinstance(document["traceEvents"], list) and document["traceEvents"]
    return {event.get("name", "") for event in document["traceEvents"]}


def _tensorboard_workers(directory: Path) -> list[str]:
    """Workers whose traces TensorBoard's profiler plugin parsed from ``directory`` (one per parsed file)."""
    loader = pytest.importorskip("torch_tb_profiler.profiler.loader", reason="pip install torch-tb-profiler")
    from torch_tb_profiler import io as tb_io

    run = loader.RunLoader("run", str(directory), tb_io.Cache()).load()
    return sorted(profile.worker for profile in run.get_profiles() if type(profile).__name__ == "RunProfile")


def _heaviest_operator_rows(report: str) -> list[tuple[str, float]]:
    """(operator, self CPU ms) of each row of the report's heaviest-operators table, in the printed order."""
    section = report.split("heaviest operators", 1)[1].split("\n", 1)[1]
    lines = iter(section.splitlines())
    assert next(lines).startswith("-") and next(lines).startswith("Operator") and next(lines).startswith("-")
    rows = []
    for line in lines:
        if line.startswith("-"):
            break
        name, _calls, self_cpu, *_ = re.split(r"\s{2,}", line.strip())
        rows.append((name, float(self_cpu)))
    return rows


def _check_heaviest_operators_table(report: str) -> list[str]:
    """What the summary promises, whatever the timings: operators only, heaviest first, the matmul among them.

    Which operator ranks first depends on timing (a preempted ``aten::add_`` can outlast the matmul on a busy
    machine), so the test checks the order of the printed times, not a fixed winner.
    """
    rows = _heaviest_operator_rows(report)
    names = [name for name, _ in rows]
    assert rows and not any(name.startswith(("[pl]", "ProfilerStep#")) for name in names)
    times = [self_cpu for _, self_cpu in rows]
    assert times == sorted(times, reverse=True), rows
    assert MATMUL_OPS & set(names), names
    return names


class _Messages(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_short_fit_on_hpu_writes_trace_with_custom_actions_and_a_real_summary(tmp_path: Path) -> None:
    profiler = HPUProfiler(dirpath=tmp_path, filename="perf-logs")
    said = _Messages()
    logging.getLogger("lightning.pytorch.profilers.profiler").addHandler(said)
    # 2 steps: the default schedule (wait, warmup, 3 x record) would end in warm-up and save nothing.
    try:
        with pytest.warns(UserWarning, match="2 training_step step.*recording every step"):
            model = _fit(profiler, max_steps=2, accelerator="hpu", devices=1)
    finally:
        logging.getLogger("lightning.pytorch.profilers.profiler").removeHandler(said)
    assert model.steps_run == 2
    # It says where the files went, once the stage is over.
    assert said.messages[-1] == (
        f"HPUProfiler wrote: report {tmp_path.resolve() / 'fit-perf-logs.txt'}; 1 trace(s) in {tmp_path.resolve()}"
        f" (view: tensorboard --logdir {tmp_path.resolve()})"
    )

    assert (tmp_path / "fit-perf-logs.txt").is_file()
    (trace,) = _traces(tmp_path)
    assert trace.name.startswith("fit-perf-logs-")
    names = _event_names(trace)
    assert {"[pl][profile]custom_block", "[pl][profile]custom_granular"} <= names
    assert _tensorboard_workers(tmp_path) == [_worker(trace)]

    heaviest = profiler.heaviest_operators()
    assert [cost.self_cpu_us for cost in heaviest] == sorted((cost.self_cpu_us for cost in heaviest), reverse=True)
    summary = profiler.summary()
    assert _check_heaviest_operators_table(summary) == [cost.name for cost in heaviest]
    assert "device memory" in summary and "MaxInUse" in summary  # HPU run: the backend's memory is reported
    assert "all records" in summary and "[pl][profile]custom_block" in summary
    _check_heaviest_operators_table((tmp_path / "fit-perf-logs.txt").read_text())


def test_long_enough_fit_keeps_the_default_schedule(tmp_path: Path, recwarn: pytest.WarningsRecorder) -> None:
    profiler = HPUProfiler(dirpath=tmp_path)
    _fit(profiler, max_steps=6, accelerator="hpu", devices=1)
    assert not [w for w in recwarn if "recording every step" in str(w.message)]
    assert _traces(tmp_path), "the default schedule saves a trace after its 5th step"


def test_lightning_still_calls_the_hooks_hpu_profiler_overrides() -> None:
    """HPUProfiler overrides private PyTorchProfiler methods; a Lightning release that renames one must fail here."""
    from lightning.pytorch.profilers import PyTorchProfiler
    from lightning.pytorch.profilers.pytorch import ScheduleWrapper

    hooks = ("_default_activities", "_create_profilers", "_cache_functions_events", "_delete_profilers")
    hooks += ("_should_override_schedule", "_default_schedule")
    assert all(callable(getattr(PyTorchProfiler, hook, None)) for hook in hooks)
    assert "_schedule" in vars(ScheduleWrapper(lambda step: torch.profiler.ProfilerAction.NONE))


def test_planned_steps_counts_epochs_max_steps_and_accumulation() -> None:
    def trainer(**overrides: Any) -> Any:
        fields: dict[str, Any] = dict(
            num_training_batches=3, max_epochs=1, max_steps=-1, accumulate_grad_batches=1,
            num_val_batches=[2], num_sanity_val_batches=[2], check_val_every_n_epoch=1,
            num_test_batches=[4], num_predict_batches=[7], state=SimpleNamespace(fn="fit"),
        )  # fmt: skip
        fields.update(overrides)
        return SimpleNamespace(**fields)

    assert planned_steps(trainer(), "training_step") == 3
    assert planned_steps(trainer(max_epochs=2), "training_step") == 6  # Lightning alone counts 3
    assert planned_steps(trainer(max_epochs=None, max_steps=4), "training_step") == 4
    assert planned_steps(trainer(max_epochs=5, max_steps=2, accumulate_grad_batches=2), "training_step") == 4
    assert planned_steps(trainer(num_training_batches=float("inf")), "training_step") == float("inf")
    assert planned_steps(trainer(max_epochs=3), "validation_step") == 2 + 2 * 3
    assert planned_steps(trainer(state=SimpleNamespace(fn="validate")), "validation_step") == 4
    assert planned_steps(trainer(), "test_step") == 4
    assert planned_steps(trainer(), "predict_step") == 7


class _BridgeActivity(enum.Enum):
    """Stands for the enum the Gaudi bridge puts in place of ``torch.profiler.ProfilerActivity`` at import."""

    CPU = 1
    CUDA = 2
    HPU = 3


class _RecordingProfile:
    """Stands for the bridge's ``torch.profiler.profile``: keeps the activities it was given."""

    def __init__(self, *, activities: Any = None, schedule: Any = None, with_stack: bool = False) -> None:
        self.activities = list(activities)


@pytest.fixture
def bridge_patched_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch.profiler as the bridge leaves it, imported *after* Lightning bound the original ProfilerActivity."""
    monkeypatch.setattr(torch.profiler, "ProfilerActivity", _BridgeActivity)
    monkeypatch.setattr(torch.profiler, "profile", _RecordingProfile)
    monkeypatch.setattr(BridgeBackend, "profiler_activities", lambda self: [_BridgeActivity.CPU, _BridgeActivity.HPU])


@pytest.mark.usefixtures("standin")
def test_stand_in_records_cpu_activity_only() -> None:
    profiler = HPUProfiler()
    profiler._create_profilers()
    assert profiler.profiler is not None
    assert set(profiler._profiler_kwargs["activities"]) == {torch.profiler.ProfilerActivity.CPU}
    profiler.profiler = None  # never entered: nothing to close


@pytest.mark.usefixtures("standin", "bridge_patched_torch")
def test_activities_come_from_the_patched_enum_whatever_the_import_order() -> None:
    default = HPUProfiler()
    default._create_profilers()
    assert isinstance(default.profiler, _RecordingProfile)
    assert default.profiler.activities == [_BridgeActivity.CPU, _BridgeActivity.HPU]

    # Members bound before the bridge's import (Lightning's own, a user's) are translated by name.
    requested = HPUProfiler(activities=[LightningsProfilerActivity.CPU])
    requested._create_profilers()
    assert isinstance(requested.profiler, _RecordingProfile)
    assert requested.profiler.activities == [_BridgeActivity.CPU]
    default.profiler = requested.profiler = None  # stand-ins, never entered


@pytest.mark.usefixtures("standin", "bridge_patched_torch")
def test_non_hpu_trainer_gets_cpu_activity_only() -> None:
    profiler = HPUProfiler()
    trainer = Trainer(accelerator="cpu", devices=1, profiler=profiler, logger=False)
    model = MatmulModel(profiler)
    model.trainer = trainer
    profiler._lightning_module = model
    profiler._create_profilers()
    assert isinstance(profiler.profiler, _RecordingProfile)
    assert profiler.profiler.activities == [_BridgeActivity.CPU]
    profiler.profiler = None


@pytest.mark.gaudi
def test_bridge_adds_the_hpu_activity_and_the_trace_holds_it(tmp_path: Path) -> None:
    from lightning_hpu.runtime import require_backend

    activities = require_backend().profiler_activities()
    assert torch.profiler.ProfilerActivity.HPU in activities
    profiler = HPUProfiler(dirpath=tmp_path, filename="perf-logs")
    _fit(profiler, max_steps=6, accelerator="hpu", devices=1)
    assert _traces(tmp_path)
    assert profiler.heaviest_operators()


@pytest.mark.usefixtures("standin")
def test_habana_profile_is_checked_again_before_the_fit_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HABANA_PROFILE", raising=False)
    HPUProfiler()
    monkeypatch.setenv("HABANA_PROFILE", "profile_api_light")  # what the bridge itself sets
    profiler = HPUProfiler(dirpath=tmp_path)
    monkeypatch.setenv("HABANA_PROFILE", "1")
    model = MatmulModel(profiler)
    with pytest.raises(ValueError, match="HABANA_PROFILE='1'"):
        Trainer(accelerator="hpu", devices=1, max_steps=1, profiler=profiler, logger=False).fit(
            model, DataLoader(TensorDataset(torch.randn(4, 2048)), batch_size=2)
        )
    assert model.steps_run == 0


def test_lightning_cli_builds_it_from_class_path(tmp_path: Path) -> None:
    pytest.importorskip("jsonargparse")
    from lightning.pytorch.cli import LightningCLI
    from lightning.pytorch.demos.boring_classes import BoringModel

    profiler_config = {
        "class_path": "lightning_hpu.HPUProfiler",
        "init_args": {"dirpath": str(tmp_path), "filename": "perf-logs", "row_limit": 5},
    }
    cli = LightningCLI(
        BoringModel,
        args={"trainer": {"accelerator": "hpu", "devices": 1, "logger": False, "profiler": profiler_config}},
        run=False,
    )
    assert isinstance(cli.trainer.profiler, HPUProfiler)
    assert cli.trainer.profiler.filename == "perf-logs"
    assert cli.trainer.profiler._row_limit == 5


@pytest.mark.multiprocess
def test_two_processes_write_one_report_and_one_trace_per_global_rank(tmp_path: Path, python_executable: str) -> None:
    """Two one-process nodes: both local ranks are 0, so only global-rank names keep the files apart."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())}
    command = [python_executable, str(ROOT / "examples" / "profiling.py"), "--dirpath", str(tmp_path)]
    command += ["--accelerator", "cpu", "--strategy", "ddp", "--devices", "1", "--num-nodes", "2", "--max-steps", "3"]
    nodes = [
        subprocess.Popen(command, env={**env, "NODE_RANK": str(rank)}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        for rank in (0, 1)
    ]
    outputs = [node.communicate(timeout=240)[0].decode() for node in nodes]
    assert [node.returncode for node in nodes] == [0, 0], outputs

    traces = _traces(tmp_path)
    assert len(traces) == 2, sorted(path.name for path in tmp_path.iterdir())
    for rank in (0, 1):
        report = (tmp_path / f"fit-perf-logs-{rank}.txt").read_text()
        assert f"heaviest operators rank: {rank}" in report
        _check_heaviest_operators_table(report)
        assert "device memory" not in report  # a CPU run: there is no device memory to report
        (trace,) = [path for path in traces if re.match(rf"fit-perf-logs-{rank}-", path.name)]
        assert {"[pl][profile]my_custom_action", "[pl][profile]my_granular_action"} <= _event_names(trace)
    assert _tensorboard_workers(tmp_path) == [_worker(trace) for trace in traces]
