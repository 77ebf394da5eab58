"""LitGPT's Python API on stand-in HPUs (``LLM.load``, ``llm.distribute(accelerator="hpu")`` and ``"auto"``,
generation and streaming), and ``litgpt serve`` through LitGPT's own console script, on a tiny checkpoint written with
LitGPT's own classes (nothing is downloaded)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("litgpt", reason="needs LitGPT: pip install 'lightning-hpu[litgpt]'")
pytest.importorskip("litserve", reason="needs LitServe: pip install 'lightning-hpu[serve]'")

import litgpt.api
import torch
from litgpt import GPT, LLM, Config
from litgpt.utils import save_config

from lightning_hpu.fabric.strategies import SingleHPUStrategy
from lightning_hpu.runtime import HPUConfigurationError, HPUNotAvailableError
from lightning_hpu.serving import register
from tests.helpers.litgpt_data import WORDS, write_tokenizer
from tests.helpers.paths import SCENARIOS
from tests.helpers.processes import free_port, scenario_environment

#: A LLaMA-style model of 2 layers of width 16, as the LitGPT command-line tests use.
TINY = {
    "name": "tiny-gaudi",
    "block_size": 64,
    "vocab_size": len(WORDS),
    "padded_vocab_size": 16,
    "n_layer": 2,
    "n_head": 2,
    "n_embd": 16,
    "rotary_percentage": 1.0,
    "parallel_residual": False,
    "bias": False,
    "norm_class_name": "RMSNorm",
    "mlp_class_name": "LLaMAMLP",
    "intermediate_size": 32,
}
GREEDY = {"max_new_tokens": 4, "top_k": 1}


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A LitGPT checkpoint directory: weights, config and a word-level tokenizer."""
    directory = write_tokenizer(tmp_path_factory.mktemp("tiny-gaudi"))
    config = Config(**TINY)
    torch.manual_seed(0)
    torch.save(GPT(config).state_dict(), directory / "lit_model.pth")
    save_config(config, directory)
    return directory


@pytest.fixture(autouse=True)
def _registered() -> None:
    register("litgpt.api")  # done by the import hook in a program; here once more, which changes nothing


def _device(llm: Any) -> torch.device:
    return next(llm.model.parameters()).device


def test_distribute_on_the_hpu_generates_and_streams_as_the_cpu(checkpoint: Path, standin: object) -> None:
    on_cpu = LLM.load(str(checkpoint), distribute=None)
    on_cpu.distribute(accelerator="cpu", precision="32-true")
    on_hpu = LLM.load(str(checkpoint), distribute=None)
    on_hpu.distribute(accelerator="hpu", devices=1, precision="32-true")
    assert _device(on_hpu).type == "hpu" and isinstance(on_hpu.fabric.strategy, SingleHPUStrategy)
    assert litgpt.api.L is __import__("lightning"), "litgpt.api's Lightning is its own again after the call"
    text = on_cpu.generate("hello gaudi", **GREEDY)
    assert on_hpu.generate("hello gaudi", **GREEDY) == text
    assert "".join(on_hpu.generate("hello gaudi", stream=True, **GREEDY)) == text.replace(" ", "")
    chat = {"sys_prompt": "the model is fast", **GREEDY}  # the chat path: a system prompt through the prompt style
    assert on_hpu.generate("hello", **chat) == on_cpu.generate("hello", **chat)


def test_auto_loads_and_distributes_on_the_hpu_where_there_is_one(checkpoint: Path, standin: object) -> None:
    assert _device(LLM.load(str(checkpoint))).type == "hpu"  # LLM.load's default, distribute="auto"
    llm = LLM.load(str(checkpoint), distribute=None)
    llm.distribute()
    assert _device(llm).type == "hpu"


def test_distribute_refuses_more_than_one_hpu_and_a_machine_without_one(checkpoint: Path, no_hpu: None) -> None:
    llm = LLM.load(str(checkpoint), distribute=None)
    with pytest.raises(HPUConfigurationError, match=r"^`llm.distribute\(accelerator='hpu', devices=2\)`: LitGPT runs"):
        llm.distribute(accelerator="hpu", devices=2)
    with pytest.raises(HPUNotAvailableError, match="set LIGHTNING_HPU_BACKEND=cpu"):
        llm.distribute(accelerator="hpu")
    llm.distribute()  # "auto" without an HPU: LitGPT's own choice, the CPU here
    assert _device(llm).type == "cpu"


#: Runs LitGPT's console script and reports the HPU memory each inference worker holds when it is stopped.
SERVE = SCENARIOS / "litgpt_serve_scenario.py"


def _stop(server: subprocess.Popen[str], out: Path) -> str:
    """Ends the server's process group, and the group the server made itself if a preloaded Python runs it (its
    processes are not in the first); returns the server's output."""
    if server.poll() is None:
        server.kill()
    groups = [server.pid]
    with contextlib.suppress(FileNotFoundError, ValueError):
        groups.append(int((out / "server-pid").read_text()))
    for group in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):  # LitServe's manager, API and worker processes
            os.killpg(group, signal.SIGKILL)
    return server.communicate()[0]


@pytest.mark.multiprocess
def test_litgpt_serve_answers_from_the_hpu(python_executable: str, checkpoint: Path, tmp_path: Path) -> None:
    env = scenario_environment(leave_out=("LIGHTNING_HPU_", "HLS_", "HABANA_"), LIGHTNING_HPU_BACKEND="cpu",
                               LITGPT_SERVE_SCENARIO_OUT=str(tmp_path))  # fmt: skip
    port = free_port()
    litgpt_script = Path(sys.executable).with_name("litgpt")
    command = [python_executable, str(SERVE), str(litgpt_script), "serve", str(checkpoint), "--port", str(port)]
    server = subprocess.Popen([*command, "--max_new_tokens", "4"], env=env, cwd=tmp_path, text=True,
                              start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            assert server.poll() is None, server.communicate()[0][-3000:]
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as response:
                    if response.status == 200:
                        break
            except OSError:
                time.sleep(0.5)
        body = json.dumps({"prompt": "hello gaudi"}).encode()
        headers = {"Content-Type": "application/json"}
        request = urllib.request.Request(f"http://127.0.0.1:{port}/predict", data=body, headers=headers)
        with urllib.request.urlopen(request, timeout=120) as response:
            completion = json.loads(response.read())["output"]
        assert isinstance(completion, str) and completion.split()[0] in WORDS
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/info", timeout=5) as response:
            assert json.loads(response.read())["server"]["devices"] == [["hpu:0"]]
        server.send_signal(signal.SIGINT)  # as Ctrl+C: LitServe stops its workers with SIGTERM
        server.wait(timeout=120)
    finally:
        output = _stop(server, tmp_path)
    held = [int(path.read_text()) for path in tmp_path.glob("worker-*")]
    assert held and held[0] > 0, f"the worker held no HPU memory (its weights were not on the HPU): {output[-3000:]}"


@pytest.mark.multiprocess
def test_from_litgpt_import_llm_is_registered_though_torch_comes_first_inside_it(python_executable: str) -> None:
    """``litgpt.api`` imports Lightning, and with it torch, first: the import hook is installed while it runs and
    registers it once the import binds it on ``litgpt``. LitServe imported before it (a server script's order), which
    imports neither, is registered once Lightning is, not while Lightning is half-imported. A real interpreter, as
    the order of a fresh start's imports is the point; the switch, read by every start, is checked in a preloaded
    one."""
    code = "from litgpt import LLM; import sys; print(hasattr(LLM.distribute, '__lightning_hpu_wrapped__'))"
    litserve_first = (
        "import litserve; from litgpt import LLM; from litserve import connector;"
        " print(hasattr(LLM.distribute, '__lightning_hpu_wrapped__'),"
        " hasattr(connector._Connector.__init__, '__lightning_hpu_wrapped__'))"
    )
    env = scenario_environment(leave_out=("LIGHTNING_HPU_",), LIGHTNING_HPU_BACKEND="cpu")
    done = subprocess.run(
        [sys.executable, "-W", "error::RuntimeWarning", "-c", litserve_first],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.stdout.split() == ["True", "True"], done.stderr[-3000:]
    switched_off = subprocess.run([python_executable, "-c", code], env={**env, "LIGHTNING_HPU_AUTOLOAD": "0"},
                                  capture_output=True, text=True, timeout=300)  # fmt: skip
    assert switched_off.stdout.split() == ["False"], switched_off.stderr[-3000:]
