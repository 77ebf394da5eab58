"""``lightning-hpu check``, the command: launched on stand-in HPUs, its JSON against the shipped schema, its refusals.

Four launches of the command: ``--quick`` on one stand-in HPU and on two, both of which must pass with every row
present, one on two HPUs with every fault of ``LIGHTNING_HPU_TEST_CHECK_FAULT`` injected at once, where every row must
fail and the exit status be 1, all three as ``python -m lightning_hpu`` in the preloaded Python (``python_executable``,
whose workers are preloaded too), and a short one (``--only multi``) through the console script as users run it,
whose ranks overrun ``--timeout`` and must all be gone when it returns. The command's refusals run in this process.
The judgements the rows make are tested in ``tests/lightning_hpu/check/``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest

from lightning_hpu.check.faults import FAULT_ENV, FAULTS
from lightning_hpu.check.report import ROWS
from lightning_hpu.check.rows import CHECKS
from lightning_hpu.check.schema import validate
from lightning_hpu.pytorch.check.cli import main as check_main
from tests.helpers.paths import ROOT

#: Every row the command prints when every check runs.
ALL_ROWS = {name for names in ROWS.values() for name in names}


#: The console script the README and docs/guide/node-check.md run (the real interpreter, whose workers are real too).
CONSOLE_SCRIPT = [str(Path(sys.executable).with_name("lightning-hpu"))]


def python_m(python: str) -> list[str]:
    """``python -m lightning_hpu`` with ``python``."""
    return [python, "-m", "lightning_hpu"]


def run_check(
    tmp_path: Path,
    devices: int,
    *arguments: str,
    command: list[str],
    faults: str = "",
    env_extra: dict[str, str] | None = None,
) -> tuple[int, str, dict[str, Any]]:
    """``<command> check --quick --devices <devices> --json ...`` on stand-in HPUs: exit status, output, JSON."""
    env = {key: value for key, value in os.environ.items() if key not in ("PT_HPU_LAZY_MODE", FAULT_ENV)}
    env.update(
        LIGHTNING_HPU_BACKEND="cpu",
        LIGHTNING_HPU_CPU_DEVICES=str(devices),
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")])),
    )
    if faults:
        env[FAULT_ENV] = faults
    env.update(env_extra or {})
    out = tmp_path / "check.json"
    done = subprocess.run(
        [*command, "check", "--quick", "--devices", str(devices), "--json", str(out), *arguments],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=400,
    )
    document = json.loads(out.read_text()) if out.exists() else {}
    return done.returncode, done.stdout, document


def results(document: dict[str, Any]) -> dict[str, str]:
    return {row["name"]: row["result"] for row in document["rows"]}


@pytest.mark.multiprocess
def test_quick_check_on_one_hpu_passes_every_row(tmp_path: Path, python_executable: str) -> None:
    status, output, document = run_check(tmp_path, 1, command=python_m(python_executable))
    assert status == 0, output[-6000:]
    validate(document)
    seen = results(document)
    assert set(seen) == ALL_ROWS, output
    multi = {name for name in ALL_ROWS if name.startswith("multi.")}
    assert {name: seen[name] for name in multi} == dict.fromkeys(multi, "n/a")
    assert all(seen[name] == "pass" for name in ALL_ROWS - multi), seen
    assert document["devices"] == 1 and document["backend"] == "CPU stand-in" and document["passed"]
    for name in ALL_ROWS:  # the table printed every row
        assert f"\n{name} " in output


@pytest.mark.multiprocess
def test_quick_check_on_two_hpus_passes_every_row(tmp_path: Path, python_executable: str) -> None:
    status, output, document = run_check(tmp_path, 2, command=python_m(python_executable))
    assert status == 0, output[-6000:]
    validate(document)
    seen = results(document)
    assert seen == dict.fromkeys(ALL_ROWS, "pass"), output
    rows = {row["name"]: row for row in document["rows"]}
    assert rows["multi.allreduce"]["standin"] and rows["throughput"]["standin"]  # marked: not a Gaudi's figures
    assert "lightning-hpu check passed" in output and "measured on the CPU stand-in" in output


@pytest.mark.multiprocess
def test_every_injected_fault_fails_its_row(tmp_path: Path, python_executable: str) -> None:
    status, output, document = run_check(tmp_path, 2, command=python_m(python_executable), faults=",".join(FAULTS))
    assert status == 1, output[-6000:]
    validate(document)
    seen = results(document)
    assert {name: seen.get(name) for name in FAULTS} == dict.fromkeys(FAULTS, "fail"), output
    assert not document["passed"] and "lightning-hpu check FAILED" in output
    rows = {row["name"]: row for row in document["rows"]}
    assert rows["fit.recompiles"]["value"] > 0  # a recompile in the steady steps, counted
    assert rows["multi.ddp"]["value"] > 0  # rank 1's weights differ
    assert "PytorchStreamReader" in rows["checkpoints.async"]["detail"]  # the truncated file is refused on reading


@pytest.mark.multiprocess
def test_a_worker_that_overruns_is_killed_with_every_rank(tmp_path: Path) -> None:
    """Through the console script, as users run it, in the real interpreter: the ranks that must be gone are found by
    the environment they started with, which a preloaded fork's ``/proc`` entry does not show."""
    tag = f"{os.getpid()}-{tmp_path.name}"  # marks this run's processes, which the command must all end
    status, output, document = run_check(
        tmp_path,
        2,
        "--only",
        "multi",
        "--timeout",
        "2",
        command=CONSOLE_SCRIPT,
        env_extra={"LIGHTNING_HPU_TEST_CHECK_TAG": tag},
    )
    assert status == 1, output[-4000:]
    rows = {row["name"]: row for row in document["rows"]}
    assert {rows[name]["result"] for name in ROWS["multi"]} == {"fail"}
    assert "overran its time and was killed" in rows["multi.ddp"]["detail"]
    left = []
    for process in psutil.process_iter(["pid"]):
        with contextlib.suppress(psutil.Error):
            if process.environ().get("LIGHTNING_HPU_TEST_CHECK_TAG") == tag:
                left.append(process.pid)
    assert not left, f"processes of the check outlived it: {left}"


def test_the_command_refuses_more_devices_than_there_are(standin: object, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        check_main(["--devices", "99"])
    assert exit_info.value.code == 2
    assert "--devices 99 asks for more HPUs than the" in capsys.readouterr().err


def test_only_and_skip_take_the_check_names() -> None:
    assert CHECKS == ("devices", "fit", "precision", "multi", "throughput", "checkpoints", "memory")
    with pytest.raises(SystemExit):
        check_main(["--only", "fitt"])


def test_the_command_without_a_subcommand_prints_the_environment_report(
    standin: object, capsys: pytest.CaptureFixture[str]
) -> None:
    from lightning_hpu.__main__ import main

    assert main([]) == 0
    assert capsys.readouterr().out.startswith("lightning-hpu environment report")
    with pytest.raises(SystemExit) as exit_info:
        main(["check", "--devices", "99"])  # `check` reaches the node check's own arguments
    assert exit_info.value.code == 2


def test_without_an_hpu_every_row_fails_at_once(
    no_hpu: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    levels = [logging.getLogger(name).level for name in ("lightning.pytorch", "lightning.fabric")]
    assert check_main(["--quick", "--json", str(tmp_path / "check.json")]) == 1
    # Lightning's loggers are quiet during the check only: later code in the process still gets its info lines.
    assert [logging.getLogger(name).level for name in ("lightning.pytorch", "lightning.fabric")] == levels
    document = json.loads((tmp_path / "check.json").read_text())
    validate(document)
    assert results(document) == dict.fromkeys(ALL_ROWS, "fail")
    assert "no HPU (see the devices row)" in capsys.readouterr().out
