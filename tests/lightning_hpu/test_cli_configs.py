"""Every public class of the Trainer from a LightningCLI file: the same object as the same call in Python, and it fits.

For each public strategy, precision plugin, profiler, callback and checkpoint IO, a config sets a documented argument
to a value other than its default. The object LightningCLI builds from it must equal the one built in Python (the
plain values of its attributes: ``_ddp_kwargs``, ``config``, ``_timeout``, ...), also from the config
``--print_config`` prints (which spells out every default, as jsonargparse passes them), and that printed config must
fit a tiny model for two steps on one HPU of the stand-in, in this process.
"""

from __future__ import annotations

import contextlib
import copy
import enum
import io
import sys
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml
from lightning.fabric.plugins import CheckpointIO
from lightning.pytorch import Trainer
from lightning.pytorch.demos.boring_classes import BoringModel

import lightning_hpu
from tests.helpers.paths import ROOT
from tests.helpers.trainer import quiet_trainer_kwargs

LightningCLI = pytest.importorskip("lightning.pytorch.cli").LightningCLI
pytest.importorskip("jsonargparse")

#: What every config's Trainer gets: one HPU, two training steps, no validation, quiet, under the test's directory.
RUN = {"accelerator": "hpu", "devices": 1, "max_steps": 2, "limit_val_batches": 0}


@pytest.fixture(autouse=True)
def _no_command_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """LightningCLI reads its ``args``, not pytest's command line (which it warns about)."""
    monkeypatch.setattr(sys, "argv", ["cli"])


class Model(BoringModel):
    """Lightning's boring model, with the ``configure_model`` hook model parallelism asks for."""

    def configure_model(self) -> None:
        """One device: nothing to shard or parallelize."""


@dataclass(frozen=True)
class Case:
    """A public class, where it goes in the Trainer's config, and the arguments it gets there."""

    cls: type
    place: str  # "strategy", "plugins", "profiler" or "callbacks"
    init_args: dict[str, Any] = field(default_factory=dict)
    trainer: dict[str, Any] = field(default_factory=dict)  # what else the Trainer needs (a plugin's strategy)
    python_args: dict[str, Any] | None = None  # where Python passes objects that the file names by import path
    lazy: bool = False  # runs in the legacy lazy mode only

    def __str__(self) -> str:
        return f"{self.cls.__name__}({', '.join(f'{k}={v!r}' for k, v in self.init_args.items())})"


CASES = [
    Case(lightning_hpu.SingleHPUStrategy, "strategy", {"last_batch": "drop", "pipeline_forward_backward": True}),
    Case(lightning_hpu.HPUParallelStrategy, "strategy", {"fast_ddp": True}),
    Case(lightning_hpu.HPUParallelStrategy, "strategy", {"find_unused_parameters": True, "timeout": "0:05:00"}),
    Case(lightning_hpu.HPUDeepSpeedStrategy, "strategy", {"stage": 2}),
    Case(lightning_hpu.HPUFSDPStrategy, "strategy", {"sharding_strategy": "SHARD_GRAD_OP"}),
    Case(lightning_hpu.HPUModelParallelStrategy, "strategy", {"save_distributed_checkpoint": False}),
    Case(lightning_hpu.HPUPrecisionPlugin, "plugins", {"precision": "bf16-mixed"}),
    Case(
        lightning_hpu.HPUDeepSpeedPrecisionPlugin,
        "plugins",
        {"precision": "bf16-mixed"},
        {"strategy": "hpu_deepspeed"},
    ),
    Case(lightning_hpu.HPUFSDPPrecisionPlugin, "plugins", {"precision": "bf16-mixed"}, {"strategy": "hpu_fsdp"}),
    Case(
        lightning_hpu.HPUModelParallelPrecisionPlugin,
        "plugins",
        {"precision": "bf16-mixed"},
        {"strategy": "hpu_model_parallel"},
    ),
    Case(lightning_hpu.HPUCheckpointIO, "plugins"),
    Case(lightning_hpu.HPUAsyncCheckpointIO, "plugins", {"reuse_host_buffers": False}),
    Case(lightning_hpu.HPUProfiler, "profiler", {"row_limit": 5, "filename": "perf", "export_to_chrome": False}),
    Case(lightning_hpu.HPUCompile, "callbacks", {"fullgraph": True}),
    Case(lightning_hpu.HPUFp8Inference, "callbacks", {"mode": "measure", "dump_stats_path": "fp8/stats"}),
    Case(lightning_hpu.HPUGraphs, "callbacks", {"max_graphs": 3}, lazy=True),
    Case(lightning_hpu.HPULossLogger, "callbacks", {"name": "train_loss"}),
    Case(lightning_hpu.HPURecompileMonitor, "callbacks", {"warmup_steps": 1}),
    Case(
        lightning_hpu.HPUThroughputMonitor,
        "callbacks",
        {"batch_size_fn": "builtins.len", "warmup_steps": 1, "window_size": 2},
        python_args={"batch_size_fn": len, "warmup_steps": 1, "window_size": 2},
    ),
]


def test_the_cases_cover_every_public_trainer_class() -> None:
    from lightning.pytorch.callbacks import Callback
    from lightning.pytorch.plugins import Precision
    from lightning.pytorch.profilers import Profiler
    from lightning.pytorch.strategies import Strategy

    kinds = (Strategy, Precision, Profiler, Callback, CheckpointIO)
    public = {getattr(lightning_hpu, name) for name in lightning_hpu.__all__}
    configurable = {value for value in public if isinstance(value, type) and issubclass(value, kinds)}
    assert configurable == {case.cls for case in CASES}


def _python_value(name: str, value: Any) -> Any:
    """What Python passes for a value a config spells as text (a duration, an enum member's name)."""
    if name == "timeout":
        hours, minutes, seconds = (int(part) for part in value.split(":"))
        return timedelta(hours=hours, minutes=minutes, seconds=seconds)
    if name == "sharding_strategy":
        from torch.distributed.fsdp import ShardingStrategy

        return ShardingStrategy[value]
    return value


def trainer_config(case: Case, root: Path) -> dict[str, Any]:
    """The ``trainer:`` section of the case's config file."""
    entry = {"class_path": f"lightning_hpu.{case.cls.__name__}", "init_args": case.init_args}
    return {
        **quiet_trainer_kwargs(root),
        **RUN,
        **case.trainer,
        case.place: [entry] if case.place in ("plugins", "callbacks") else entry,
    }


def write_config(case: Case, root: Path) -> Path:
    """The case's config file, under ``root``."""
    config_file = root / "config.yaml"
    config_file.write_text(yaml.safe_dump({"trainer": trainer_config(case, root)}))
    return config_file


def built_in_python(case: Case, root: Path) -> Trainer:
    """The Trainer of the case's config, written in Python."""
    args = case.python_args or {name: _python_value(name, value) for name, value in case.init_args.items()}
    component = case.cls(**args)
    return Trainer(
        **quiet_trainer_kwargs(root),
        **RUN,
        **case.trainer,
        **{case.place: [component] if case.place in ("plugins", "callbacks") else component},
    )


def component(trainer: Trainer, case: Case) -> object:
    """The object the case configures, where the Trainer keeps it."""
    if case.place == "strategy":
        return trainer.strategy
    if case.place == "profiler":
        return trainer.profiler
    if case.place == "callbacks":
        return next(callback for callback in trainer.callbacks if type(callback) is case.cls)
    if issubclass(case.cls, CheckpointIO):
        return trainer.strategy.checkpoint_io
    return trainer.strategy.precision_plugin


_PLAIN = (bool, int, float, str, type(None), timedelta, torch.dtype, torch.device, enum.Enum, Path)


def _plain(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return all(map(_plain, value))
    if isinstance(value, dict):
        return all(_plain(key) and _plain(item) for key, item in value.items())
    return isinstance(value, _PLAIN) or (callable(value) and getattr(value, "__module__", None) == "builtins")


#: What differs by construction: the record of the call itself (``lightning_hpu.integration.strategy_arguments``).
_NOT_COMPARED = ("_lightning_hpu_init_arguments",)


def state(obj: object) -> dict[str, Any]:
    """The type and a copy of the plain values (settings, not collaborators) of ``obj``'s attributes: to compare."""
    plain = {name: value for name, value in vars(obj).items() if _plain(value) and name not in _NOT_COMPARED}
    return {"type": type(obj), **copy.deepcopy(plain)}


class RecordingCLI(LightningCLI):
    """LightningCLI that keeps what the configured object was right before ``fit`` ran."""

    case: Case
    before: dict[str, Any] | None = None

    def before_fit(self) -> None:
        type(self).before = state(component(self.trainer, self.case))


def print_config(config_file: Path) -> str:
    """What ``--print_config`` prints for ``config_file`` (the whole config, every default spelled out)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exit_info:
        LightningCLI(Model, args=["--config", str(config_file), "--print_config"], run=False)
    assert exit_info.value.code in (None, 0)
    return out.getvalue()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_a_config_file_builds_what_python_builds_and_its_printed_round_trip_fits(
    case: Case, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if case.lazy:
        request.getfixturevalue("lazy_mode")
    config_file = write_config(case, tmp_path)
    expected = state(component(built_in_python(case, tmp_path), case))

    from_file = LightningCLI(Model, args=["--config", str(config_file)], run=False)
    assert state(component(from_file.trainer, case)) == expected

    printed = tmp_path / "printed.yaml"
    printed.write_text(print_config(config_file))
    RecordingCLI.case, RecordingCLI.before = case, None
    cli = RecordingCLI(Model, args=["fit", "--config", str(printed)], save_config_callback=None)
    assert RecordingCLI.before == expected
    assert cli.trainer.global_step == RUN["max_steps"]


@pytest.mark.parametrize("init_args", [{}, {"static_graph": True}])
def test_a_config_file_keeps_the_gaudi_ddp_defaults(init_args: dict[str, Any], tmp_path: Path) -> None:
    """jsonargparse passes every DistributedDataParallel keyword with DDP's default: none of them is a choice."""
    case = Case(lightning_hpu.HPUParallelStrategy, "strategy", init_args)
    config_file = write_config(case, tmp_path)
    strategy = LightningCLI(Model, args=["--config", str(config_file)], run=False).trainer.strategy
    assert strategy._ddp_kwargs == {"bucket_cap_mb": 230, "gradient_as_bucket_view": True, **init_args}


def test_fast_ddp_from_a_config_file_refuses_only_what_the_file_sets(tmp_path: Path) -> None:
    """``static_graph: null`` is DDP's default (not a choice); ``broadcast_buffers: false`` is one, and is named."""
    given = {"fast_ddp": True, "broadcast_buffers": False, "static_graph": None}
    config_file = write_config(Case(lightning_hpu.HPUParallelStrategy, "strategy", given), tmp_path)
    with pytest.raises(ValueError, match=r"DistributedDataParallel, so broadcast_buffers would have no effect"):
        LightningCLI(Model, args=["--config", str(config_file)], run=False)


#: The pages whose YAML examples configure the Trainer (the CLI section, the fast DDP section).
DOC_PAGES = ("docs/guide/accelerator-and-devices.md", "docs/guide/ddp.md")


def _doc_configs() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for page in DOC_PAGES:
        for number, block in enumerate((ROOT / page).read_text().split("```yaml\n")[1:]):
            config = yaml.safe_load(block.split("```")[0])
            if isinstance(config, dict) and "trainer" in config:
                found.append((f"{page}#{number}", config))
    return found


@pytest.mark.parametrize(("where", "config"), _doc_configs(), ids=[where for where, _ in _doc_configs()])
def test_the_docs_configs_build_on_the_standin(where: str, config: dict[str, Any], tmp_path: Path) -> None:
    config_file = tmp_path / "config.yaml"
    trainer = {**config["trainer"], **quiet_trainer_kwargs(tmp_path), "devices": 1}
    config_file.write_text(yaml.safe_dump({"trainer": trainer}))
    LightningCLI(Model, args=["--config", str(config_file)], run=False)
