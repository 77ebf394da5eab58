"""LitServe's inference workers on stand-in HPUs, served by a script with no lightning_hpu import
(``tests/scenarios/litserve_scenario.py``): one server run with two HPUs, a batching and a streaming endpoint, whose
workers each answer from their own HPU module with the values the CPU computes, and die with the server; and one
worker's binding, in this process."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("litserve", reason="needs LitServe: pip install 'lightning-hpu[serve]'")

import torch

from lightning_hpu.runtime import HPUConfigurationError
from lightning_hpu.serving import litserve_worker
from tests.helpers.paths import SCENARIOS
from tests.helpers.processes import alive, free_port, scenario_environment
from tests.helpers.standin import reset_backend
from tests.scenarios.litserve_scenario import make_model

SCENARIO = SCENARIOS / "litserve_scenario.py"
#: Inputs of the requests: each answer is checked against the CPU's.
INPUTS = [[float(i), 1.0, -1.0, 0.5 * i] for i in range(8)]


def _post(port: int, path: str, x: list[float]) -> bytes:
    url, data = f"http://127.0.0.1:{port}{path}", json.dumps({"x": x}).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        return response.read()  # type: ignore[no-any-return]


def _objects(body: bytes) -> list[dict[str, Any]]:
    """The JSON objects of a streamed body, which LitServe sends one a line."""
    return [json.loads(line) for line in body.decode().splitlines() if line.strip()]


def _wait_until_healthy(port: int, server: subprocess.Popen[str], seconds: float = 300) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert server.poll() is None, f"the server stopped: {server.communicate()[1][-3000:]}"
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise AssertionError("the server's workers did not become ready")


def _start(accelerator: str, port: int, **settings: str) -> subprocess.Popen[str]:
    env = scenario_environment(leave_out=("LIGHTNING_HPU_", "HLS_", "HABANA_"), LIGHTNING_HPU_BACKEND="cpu", **settings)
    return subprocess.Popen(
        [sys.executable, str(SCENARIO), accelerator, "2", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # so that the test can end whatever the server left behind
    )


@pytest.mark.multiprocess
def test_auto_serves_on_two_hpus_batching_and_streaming_and_workers_die_with_the_server(tmp_path: Path) -> None:
    """A real interpreter: the workers must die with the process that started them, which a preloaded Python's
    processes (children of its server) cannot show."""
    port = free_port()
    server = _start("auto", port, LIGHTNING_HPU_CPU_DEVICES="2")
    try:
        _wait_until_healthy(port, server)
        model = make_model()
        with torch.no_grad():
            expected = [model(torch.tensor(x)).tolist() for x in INPUTS]
        with ThreadPoolExecutor(len(INPUTS)) as pool:
            answers = [json.loads(body) for body in pool.map(lambda x: _post(port, "/predict", x), INPUTS)]
        for answer, values in zip(answers, expected, strict=True):
            assert answer["y"] == pytest.approx(values, abs=1e-6)
            # setup() gets the process's HPU, as on a Gaudi; the stand-in shows the module in the weights' index
            assert (answer["device"], answer["weights"]) == ("hpu", f"hpu:{answer['module']}")
        assert {answer["module"] for answer in answers} == {"0", "1"}, "both HPUs' workers answer"

        streamed = _objects(_post(port, "/stream", INPUTS[3]))
        with torch.no_grad():
            steps = [model(torch.tensor(INPUTS[3]) * step).tolist() for step in range(3)]
        assert [chunk["y"] for chunk in streamed] == [pytest.approx(values, abs=1e-6) for values in steps]
        assert streamed[0]["weights"].startswith("hpu:")

        workers = {answer["pid"] for answer in answers} | {streamed[0]["pid"]}
        os.kill(server.pid, signal.SIGKILL)  # the server dies without a word: its workers must not stay
        server.wait(timeout=30)
        deadline = time.monotonic() + 30
        while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [pid for pid in workers if alive(pid)], "inference workers outlived their server"
    finally:
        if server.poll() is None:
            server.kill()
        with contextlib.suppress(ProcessLookupError):  # LitServe's manager and API processes
            os.killpg(server.pid, signal.SIGKILL)
        server.communicate()


@pytest.mark.multiprocess
def test_the_switch_off_leaves_litserve_as_it_is(python_executable: str) -> None:
    env = scenario_environment(leave_out=("LIGHTNING_HPU_",), LIGHTNING_HPU_BACKEND="cpu", LIGHTNING_HPU_AUTOLOAD="0")
    done = subprocess.run(
        [python_executable, str(SCENARIO), "hpu", "2", "0"], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last == "ValueError: accelerator must be one of 'auto', 'cpu', 'mps', 'cuda', or 'gpu'. Found: hpu", last


def test_a_worker_binds_its_hpu_then_runs_litserves_worker(standin: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIGHTNING_HPU_CPU_DEVICES", "2")
    reset_backend()
    monkeypatch.setenv("HLS_MODULE_ID", "")
    monkeypatch.delenv("HLS_MODULE_ID")  # recorded as unset: the binding below is undone after the test
    calls: list[tuple[Any, ...]] = []
    followed: list[int] = []
    monkeypatch.setattr("litserve.loops.inference_worker", lambda api, device, *rest: calls.append((device, *rest)))
    monkeypatch.setattr(litserve_worker, "follow_launcher", followed.append)
    litserve_worker.inference_worker("api", "cpu", 7)
    assert calls == [("cpu", 7)] and not followed and "HLS_MODULE_ID" not in os.environ, "other devices: LitServe's"
    litserve_worker.inference_worker("api", "hpu:1", 7)
    assert calls[-1] == ("hpu", 7) and followed == [os.getppid()] and os.environ["HLS_MODULE_ID"] == "1"
    assert torch.ones(1, device="hpu").device == torch.device("hpu", 1), "the process opened module 1"
    with pytest.raises(HPUConfigurationError, match=r"^LitServe's inference worker for 'hpu:0' binds this process to"
                       r" HPU module 0, but HLS_MODULE_ID=1 already binds"):  # fmt: skip
        litserve_worker.bind_worker("hpu:0")
