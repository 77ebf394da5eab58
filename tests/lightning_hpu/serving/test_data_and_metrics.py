"""What a Gaudi user runs next to serving, kept working: LitData's ``StreamingDataset`` in a 2-HPU DDP fit and over two
torchrun "nodes" (no ``NNODES`` set) gives each rank a disjoint share and every sample once, and torchmetrics metrics
synced over 2 HPUs (Trainer and Fabric) equal the single-process values
(``tests/scenarios/lit_data_metrics_scenario.py``, which imports no lightning_hpu)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("litdata", reason="needs LitData: pip install 'lightning-hpu[data]'")

from tests.helpers.paths import SCENARIOS
from tests.helpers.processes import free_port, scenario_environment
from tests.scenarios.lit_data_metrics_scenario import write_dataset

SCENARIO = SCENARIOS / "lit_data_metrics_scenario.py"
SAMPLES = 16


def _reports(out: Path, prefix: str) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(path.read_text()) for path in sorted(out.glob(f"{prefix}-*.json"))]


def _check_streaming(out: Path) -> None:
    reports = _reports(out, "trainer")
    assert len(reports) == 2, "both ranks reported"
    shares = [set(report["seen"]) for report in reports]
    assert not shares[0] & shares[1], "each rank reads its own share"
    assert sorted(reports[0]["seen"] + reports[1]["seen"]) == list(range(SAMPLES)), "every sample once"
    assert [report["total"] for report in reports] == [sum(range(SAMPLES))] * 2, "the synced metric is the whole sum"
    assert all(report["device"].startswith("hpu") for report in reports)


def _run(python: str, env: dict[str, str], *arguments: str) -> subprocess.Popen[str]:
    return subprocess.Popen([python, str(SCENARIO), *arguments], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)  # fmt: skip


def _finish(*processes: subprocess.Popen[str]) -> None:
    outputs = [process.communicate(timeout=600)[0] for process in processes]
    for process, output in zip(processes, outputs, strict=True):
        assert process.returncode == 0, output[-3000:]


@pytest.mark.multiprocess
def test_streaming_and_metrics_on_two_hpus_trainer_and_fabric(python_executable: str, tmp_path: Path) -> None:
    write_dataset(tmp_path / "data", SAMPLES)
    env = scenario_environment(
        leave_out=("LIGHTNING_HPU_",), LIGHTNING_HPU_BACKEND="cpu", LIGHTNING_HPU_CPU_DEVICES="2"
    )
    (tmp_path / "fit").mkdir()
    (tmp_path / "fabric").mkdir()
    trainer = _run(python_executable, env, "trainer", str(tmp_path / "data"), str(tmp_path / "fit"))
    _finish(trainer)
    _check_streaming(tmp_path / "fit")
    fabric = _run(python_executable, env, "fabric", str(tmp_path / "data"), str(tmp_path / "fabric"))
    _finish(fabric)
    reports = _reports(tmp_path / "fabric", "fabric")
    # rank 0 has 0..3, rank 1 has 10..13: the single-process mean and max of all eight values
    assert [(report["mean"], report["max"]) for report in reports] == [(6.5, 13.0)] * 2


@pytest.mark.multiprocess
def test_streaming_over_two_torchrun_nodes_without_nnodes(python_executable: str, tmp_path: Path) -> None:
    write_dataset(tmp_path / "data", SAMPLES)
    env = scenario_environment(leave_out=("LIGHTNING_HPU_", "NNODES"), LIGHTNING_HPU_BACKEND="cpu")
    port = str(free_port())
    torchrun = [python_executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", "1"]
    address = ["--master-addr", "127.0.0.1", "--master-port", port]
    script = [str(SCENARIO), "trainer", str(tmp_path / "data"), str(tmp_path), "--devices", "1", "--num-nodes", "2"]

    def node(rank: int) -> subprocess.Popen[str]:
        command = [*torchrun, "--node-rank", str(rank), *address, *script]
        return subprocess.Popen(command, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    nodes = [node(rank) for rank in range(2)]
    _finish(*nodes)
    _check_streaming(tmp_path)
