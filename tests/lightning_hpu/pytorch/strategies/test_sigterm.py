"""SIGTERM under the HPU parallel strategies, and what a steady training step costs, on 2 stand-in devices.

Two runs of ``sigterm_scenario.py`` at once (4 processes): ``hpu_parallel`` gets SIGTERM on rank 1 only,
``hpu_fast_ddp`` on both ranks. Every rank must stop within 30 s with a non-zero exit status, leaving loadable
checkpoints; before the signal, each rank counted a steady step with ``self.log(...)``: no host sync, no broadcast,
only the gradient all-reduce on the device, and one host-side SIGTERM vote.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import torch

from lightning_hpu.pytorch.strategies.sigterm import SIGTERM_EXIT_CODE
from tests.helpers.paths import SCENARIOS
from tests.helpers.processes import alive, scenario_environment

SCRIPT = SCENARIOS / "sigterm_scenario.py"
STOP_WITHIN_S = 30.0
RUNS = {"one_rank": ("hpu_parallel", (1,)), "all_ranks": ("hpu_fast_ddp", (0, 1))}


def _wait_until(condition, timeout: float, logs) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s\n{logs()}")
        time.sleep(0.2)


@pytest.mark.multiprocess
def test_sigterm_to_one_rank_or_all_ranks_stops_every_rank(tmp_path: Path, python_executable: str) -> None:
    # The ranks run in the preloaded interpreter: the signals go to the ranks' own pids, and what is checked is how
    # the strategies answer them (a rank following its launcher is checked by the stall test, in the real one).
    procs: dict[str, subprocess.Popen[bytes]] = {}
    for name, (strategy, _) in RUNS.items():
        (tmp_path / name).mkdir()
        procs[name] = subprocess.Popen(
            [python_executable, str(SCRIPT), str(tmp_path / name), strategy],
            env=scenario_environment(LIGHTNING_HPU_BACKEND="cpu", LIGHTNING_HPU_CPU_DEVICES="2"),
            stdout=(tmp_path / f"{name}.log").open("wb"),
            stderr=subprocess.STDOUT,
        )

    def logs() -> str:
        return "\n".join(f"--- {log.name}\n{log.read_text()[-3000:]}" for log in sorted(tmp_path.glob("*.log")))

    try:
        ready = [tmp_path / name / f"ready{rank}" for name in RUNS for rank in (0, 1)]
        _wait_until(
            lambda: all(path.exists() for path in ready) or any(p.poll() is not None for p in procs.values()),
            240,
            logs,
        )
        assert all(p.poll() is None for p in procs.values()), logs()
        pids = {name: [int((tmp_path / name / f"ready{rank}").read_text()) for rank in (0, 1)] for name in RUNS}
        start = time.monotonic()
        for name, (_, signalled) in RUNS.items():
            for rank in signalled:
                os.kill(pids[name][rank], signal.SIGTERM)
        _wait_until(lambda: not any(alive(pid) for run in pids.values() for pid in run), 120, logs)
        stopped_after = time.monotonic() - start
        codes = {name: proc.wait(timeout=30) for name, proc in procs.items()}
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()

    print(f"all ranks stopped {stopped_after:.1f} s after SIGTERM")
    assert stopped_after < STOP_WITHIN_S, f"the ranks stopped {stopped_after:.1f} s after SIGTERM\n{logs()}"
    for name in RUNS:
        assert codes[name] != 0, f"{name}: the launching process exited 0 although the run did not finish"
        for rank in (0, 1):
            exit_file = tmp_path / name / f"exit{rank}"
            assert exit_file.read_text() == str(SIGTERM_EXIT_CODE), f"{name} rank {rank}\n{logs()}"

        saved = sorted((tmp_path / name / "checkpoints").glob("*.ckpt"), key=lambda path: path.stat().st_mtime)
        assert saved, name
        checkpoint = torch.load(saved[-1], map_location="cpu", weights_only=False)
        assert checkpoint["global_step"] == int(saved[-1].stem.removeprefix("step=")), name
        assert set(checkpoint["state_dict"]) == {"net.0.weight", "net.0.bias", "net.2.weight", "net.2.bias"}

        for rank in (0, 1):
            counts = json.loads((tmp_path / name / f"counts{rank}.json").read_text())
            syncs = {key: value for key, value in counts.items() if key.startswith("sync:")}
            assert syncs == {}, f"{name} rank {rank}: host syncs per step {syncs}"
            assert "dist:broadcast" not in counts and "device:broadcast" not in counts, counts
            device = {key: value for key, value in counts.items() if key.startswith("device:")}
            assert device == {"device:allreduce": 1.0}, f"{name}: only the gradient all-reduce, got {device}"
            assert counts["host:sigterm_vote"] == 1.0, counts
