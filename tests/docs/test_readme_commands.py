"""Every shell command in the README and the documentation (docs/**/*.md) runs as written, on the CPU stand-in, from
a fresh shell at the clone's root.

The commands are read from the pages' fenced ``bash`` blocks, so commands added later are covered without
editing this file. A command is one logical line (``\\`` continues it). Each one either runs here or is skipped for
a reason this file names: the Quick-start commands (they built the environment this test runs in), commands
for a Gaudi (marked ``on a Gaudi`` in the README), parts of a multi-node job, installs from the network, servers,
and the few commands listed in ``SLOW``. Every other command runs with ``bash -c`` in a scratch copy of the
clone (links to its files, so outputs such as ``profiler_logs/`` land in the scratch directory), without the
stand-in variables of this test process: it must set what it needs itself, as a new user's shell would. The
benchmarks in ``SMOKE_ARGUMENTS`` run with smaller sizes appended (the README's figures come from full-size runs).

The scratch copy's ``.venv`` is the environment under test: the one named by ``LIGHTNING_HPU_TEST_VENV``, else the
virtual environment running this test (so each CI leg's venv, such as ``.venv-torch29``, runs the commands with its
own torch), else the clone's ``.venv``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.paths import ROOT

README = ROOT / "README.md"
#: The pages whose commands run: the README and every Markdown page of the documentation.
PAGES = [README, *sorted(path for path in (ROOT / "docs").rglob("*.md") if "_build" not in path.parts)]

#: Commands that work on the stand-in but take minutes here; matched by a substring of the command.
SLOW = {
    "--offload": "compiles DeepSpeed's cpu_adam C++ extension on its first run (minutes)",
    "examples/ray_train.py": (
        "starts a local Ray cluster (a minute or more on 2 busy cores); "
        "tests/lightning_hpu/pytorch/ray/test_ray_train.py runs the same path:"
        " a TorchTrainer job of 2 HPU workers on the stand-in"
    ),
    "lightning-hpu check": (
        "trains in four processes on 2 HPUs (a minute here); "
        "tests/lightning_hpu/pytorch/check/test_cli.py runs the same command"
    ),
    "scripts/bridge_suite.py": (
        "needs a clone of the Intel Gaudi bridge's source, which the project's tests must not (about 80 s with one); "
        "tests/gaudi_standin/ holds a regression test for each group of its cases"
    ),
    "examples/transformers_finetune.py": (
        "imports transformers in two processes and compiles (a minute here); "
        "tests/examples/test_transformers_example.py runs it"
    ),
}
#: Benchmarks run here on smaller sizes (these arguments are appended to the README's command): the test checks that
#: the command runs as written, through the same code, while the README's figures come from the full-size run.
SMOKE_ARGUMENTS = {
    "benchmarks/bucketing.py": "--samples 64",
    "benchmarks/sharded_memory.py": "--width 128 --blocks 2",
    "benchmarks/compile.py": "--depths 2 --steps 3",
    "benchmarks/async_checkpoint.py": "--megabytes 16 --rounds 1",
    "benchmarks/startup_cost.py": "--runs 1",
    "benchmarks/serving.py": "--requests 16 --rounds 1",
}
#: What a command must print besides exiting 0, matched by a substring of exactly one command: the README's own run
#: of an example is the one that checks it (no other test starts the same process again).
PRINTS = {
    "LIGHTNING_HPU_BACKEND=cpu .venv/bin/python examples/gaudi_script.py": (
        "device: GAUDI2, lazy mode: False",
        "train_loss: ",
        "last batch predicted: [",
    ),
    "LIGHTNING_HPU_BACKEND=cpu PT_HPU_LAZY_MODE=1 .venv/bin/python examples/gaudi_script.py": (
        "device: GAUDI2, lazy mode: True",
        "train_loss: ",
        "last batch predicted: [",
    ),
    "examples/fsdp.py --devices 2 --max-steps 4": ("FSDP on 2 HPUs (HPUFSDPStrategy)",),
    "examples/model_parallel.py --devices 2 --max-steps 4": (
        "model parallel on 2 HPUs {'data_parallel': 1, 'tensor_parallel': 2}",
    ),
    "examples/multi_hpu.py --devices 2 --max-steps 4": ("trained on 2 HPUs",),
}
#: Variables a new user's shell does not have; each command sets the ones it needs.
_TEST_VARIABLES = ("LIGHTNING_HPU_BACKEND", "LIGHTNING_HPU_CPU_DEVICES", "LIGHTNING_HPU_CPU_DEVICE_NAME", "PT_HPU_")


@dataclass(frozen=True)
class Command:
    text: str
    line: int  # where it starts in its page
    section: str  # the heading it is under
    page: str = "README.md"  # the page's path from the clone's root

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def skip_reason(self) -> str | None:
        if self.section.lower().startswith("quick start"):
            return "a Quick-start command: it set up the environment this test runs in"
        if "on a gaudi" in self.text.lower():
            return "runs on a Gaudi"
        if re.search(r"\b(MASTER_ADDR|NODE_RANK)=", self.text):
            return "one node's part of a multi-node job"
        if "pip install" in self.text:
            return "installs packages from the network"
        if re.search(r"\.venv-[\w.-]+/bin/", self.text):
            return "runs in an environment of its own, which its page says how to make"
        if "--leg lightning-head" in self.text:
            return "builds Lightning from a git checkout of its repository, which this test (and CI) has not"
        if "scripts/test.sh" in self.text or ".ci/run" in self.text:
            return "runs the test suite this test is part of (CI runs it)"
        if re.search(r"scripts/(docs|package_check|figures)\.sh", self.text):
            return "builds the documentation, the distributions or the figures: tests/docs/test_docs.py runs these"
        if re.search(r"(^|/)tensorboard\b", self.text):
            return "starts a server that runs until stopped"
        return next((why for key, why in SLOW.items() if key in self.text), None)

    @property
    def to_run(self) -> str:
        """The command as this test runs it: the README's text, with a benchmark's smoke-size arguments."""
        extra = next((arguments for key, arguments in SMOKE_ARGUMENTS.items() if key in self.text), None)
        if extra is None:
            return self.text
        return re.sub(r"\s+#.*$", "", self.text) + " " + extra

    @property
    def prints(self) -> tuple[str, ...]:
        return next((lines for key, lines in PRINTS.items() if key in self.text), ())


def _commands(text: str, page: str = "README.md") -> list[Command]:
    commands: list[Command] = []
    section = ""
    in_bash = False
    pending: list[str] = []
    start = 0
    for number, line in enumerate(text.splitlines(), start=1):
        if not in_bash:
            if line.startswith("#"):
                section = line.lstrip("#").strip()
            in_bash = line.strip() == "```bash"
            continue
        if line.strip() == "```":
            in_bash = False
            continue
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if not pending:
            start = number
        pending.append(line)
        if not line.rstrip().endswith("\\"):
            commands.append(Command("\n".join(pending), start, section, page))
            pending = []
    return commands


COMMANDS = [command for path in PAGES for command in _commands(path.read_text(), str(path.relative_to(ROOT)))]
#: Where each command text first appears: a command that two pages show runs once, at its first place.
FIRST_PLACE = {command.text: command.where for command in reversed(COMMANDS)}


def _runs_here(command: Command) -> bool:
    return command.skip_reason is None and FIRST_PLACE[command.text] == command.where


def test_the_pages_have_commands_and_every_one_is_written_to_run_as_is() -> None:
    assert len(COMMANDS) >= 10 and any(command.skip_reason is None for command in COMMANDS)
    for key in PRINTS:
        matching = [command for command in COMMANDS if key in command.text and _runs_here(command)]
        assert len(matching) == 1, f"PRINTS: {key!r} must name one command that runs here, found {len(matching)}"
    for command in COMMANDS:
        where = f"{command.where}: {command.text!r}"
        # After Quick start there is no activated environment: plain `python`/`pip` is not the one with lightning.
        bare = re.search(r"(^|[\s;&|(])(?<!-m )(python3?|pip3?)\s", command.text)
        assert bare is None, f"{where}: use .venv/bin/python (.venv/bin/python -m pip for pip)"
        runs_python = ".venv/bin/python" in command.text
        if runs_python and command.skip_reason is None:
            assert "LIGHTNING_HPU_BACKEND=cpu" in command.text, (
                f"{where}: set LIGHTNING_HPU_BACKEND=cpu in the command, or say '# on a Gaudi' after it"
            )


def _venv_under_test() -> Path:
    """The environment whose ``bin/python`` the README's ``.venv/bin/python`` stands for in this run."""
    named = os.environ.get("LIGHTNING_HPU_TEST_VENV")
    if named:
        return Path(named).resolve()
    if sys.prefix != sys.base_prefix:  # running in a virtual environment
        return Path(sys.prefix).resolve()
    return ROOT / ".venv"


def _venv_with_python(venv: Path, python: str, where: Path) -> Path:
    """``venv`` (its entries linked) whose ``bin/python`` is ``python``: the preloaded interpreter of the tests."""
    where.mkdir()
    for entry in venv.iterdir():
        if entry.name != "bin":
            (where / entry.name).symlink_to(entry)
    (where / "bin").mkdir()
    for entry in (venv / "bin").iterdir():
        preloaded = entry.name in {"python", "python3", f"python3.{sys.version_info.minor}"}
        (where / "bin" / entry.name).symlink_to(python if preloaded else entry)
    return where


@pytest.fixture(scope="module")
def fresh_clone(tmp_path_factory: pytest.TempPathFactory, python_executable: str) -> Path:
    """A scratch directory that looks like the clone (its entries linked), for outputs to land in. Its
    ``.venv/bin/python`` is the tests' preloaded interpreter when the environment under test is this one."""
    scratch = tmp_path_factory.mktemp("clone")
    for entry in ROOT.iterdir():
        if entry.name not in {".git", ".venv", "lightning_logs", "profiler_logs", "checkpoints"}:
            (scratch / entry.name).symlink_to(entry)
    venv = _venv_under_test()
    if python_executable != sys.executable and venv == Path(sys.prefix).resolve():
        _venv_with_python(venv, python_executable, scratch / ".venv")
    else:
        (scratch / ".venv").symlink_to(venv)
    return scratch


@pytest.mark.parametrize("command", COMMANDS, ids=lambda command: command.where)
def test_readme_command_runs_as_written(command: Command, fresh_clone: Path) -> None:
    if command.skip_reason is not None:
        pytest.skip(command.skip_reason)
    if FIRST_PLACE[command.text] != command.where:
        pytest.skip(f"the same command runs at {FIRST_PLACE[command.text]}")
    env = {key: value for key, value in os.environ.items() if not key.startswith(_TEST_VARIABLES)}
    result = subprocess.run(
        ["bash", "-c", command.to_run], cwd=fresh_clone, env=env, capture_output=True, text=True, timeout=540
    )
    assert result.returncode == 0, f"{command.where} failed:\n{command.to_run}\n{result.stderr[-4000:]}"
    for line in command.prints:
        assert line in result.stdout, f"{command.where} did not print {line!r}:\n{result.stdout[-3000:]}"
