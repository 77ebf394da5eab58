"""Gaudi scripts run unchanged on the stand-in: the emulated ``habana_frameworks``, ``torch.hpu`` and ``device="hpu"``.

The scripts that matter import ``habana_frameworks`` before anything else, so they run in fresh processes:
``gaudi_script_lazy_scenario.py`` (Intel's style and the seeds' HPU-graph code inside Lightning, lazy mode) and
``gaudi_script_ddp_scenario.py`` (eager mode, DDP over two processes that Lightning starts, torch.compile,
DeepSpeed). The import hook itself is checked in-process, on a private copy of ``sys.meta_path``.
``examples/gaudi_script.py`` runs (eager and lazy) as the README's commands, in ``test_readme_commands.py``, which
checks what it prints.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import gaudi_standin.startup.import_hook as hook
from lightning_hpu.runtime import MEMORY_STAT_KEYS, bridge_installed
from tests.helpers.paths import ROOT, SCENARIOS
from tests.helpers.processes import free_port, scenario_environment


def _env(**extra: str) -> dict[str, str]:
    """The environment of a fresh script: the stand-in chosen, nothing of a launcher, a port of its own."""
    env = scenario_environment(leave_out=("PT_HPU_LAZY_MODE", "DS_ACCELERATOR"), LIGHTNING_HPU_BACKEND="cpu")
    env.update(MASTER_PORT=str(free_port()), **extra)
    return env


def _run(
    args: list[str], env: dict[str, str], timeout: int = 300, python: str = sys.executable
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([python, *args], env=env, capture_output=True, text=True, timeout=timeout)


@pytest.mark.multiprocess
def test_a_gaudi_script_with_the_seeds_hpu_graph_code_runs_unchanged_in_lazy_mode(
    tmp_path: Path, python_executable: str
) -> None:
    out = tmp_path / "report.json"
    script = SCENARIOS / "gaudi_script_lazy_scenario.py"
    result = _run([str(script), str(out)], _env(PT_HPU_LAZY_MODE="1"), python=python_executable)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    report: dict[str, Any] = json.loads(out.read_text())
    # The bridge's API, backed by the package's own stand-in backend (a step marker of htcore is counted there).
    assert report["is_available"] and report["device_count"] == 1 and report["device_name"] == "GAUDI2"
    assert report["is_lazy"] and report["hpu_is_torch_hpu"]
    assert report["mark_step_counted"] == 1
    assert report["bridge_installed"] is False
    assert report["tensor_device"] == report["to_device"] == report["param_device"] == "hpu:0"
    assert report["memory_keys"] == sorted(MEMORY_STAT_KEYS)
    assert report["max_memory_allocated"] > 0
    assert report["hpu_seed_repeats"] and report["set_inference_env"]
    # FusedAdamW and FusedClipNorm from hpex trained the model (6 steps, one clip each).
    assert report["fused_adamw_trained"] and report["fused_clip_norms"] == 6
    # Capture once with htcore.hpu.graph, replay the other 5 steps, and the replays train.
    assert report["capture_replay"] == {"captures": 1, "replays": 5, "trained": True, "losses_vary": True}
    # make_graphed_callables: forward and backward captured once, both replayed at each of the 6 steps.
    assert report["make_graphed_callables"] == {"captures": 2, "replays": 12, "trained": True}
    # ModuleCacher and wrap_in_hpu_graph: one shape, so one graph, hit by the other 5 batches.
    assert report["module_cacher"] == {"inserts": 1, "hits": 5}
    assert report["wrap_in_hpu_graph"]["inserts"] == 1 and report["wrap_in_hpu_graph"]["hits"] == 5
    # Three cached submodules around a dynamic op, fenced by two counted step markers.
    assert report["dynamic"]["inserts"] >= 2
    assert report["dynamic"]["mark_steps"] == [2] * 6
    # The bridge's hpu package: its graphs submodule, metrics that see no recompilation after a warm-up, and one
    # graph for every size with dynamic shapes on.
    assert report["bridge_modules"] == {
        "graphs_is_torch_hpu_graphs": True,
        "warm_up_compiles": True,
        "recompiles_after_warm_up": 0,
        "recompile_reason": None,
        "dynamic_size_compiles": 1,
        "global_counted": True,
        "autocast": [True, False],
        "fallbacks": {},
    }


@pytest.mark.multiprocess
def test_a_gaudi_script_runs_unchanged_in_eager_mode_and_in_the_ddp_processes_lightning_starts(
    tmp_path: Path, python_executable: str
) -> None:
    env = _env(LIGHTNING_HPU_CPU_DEVICES="2", TORCH_EXTENSIONS_DIR=str(ROOT / "build" / "torch_extensions"))
    script = SCENARIOS / "gaudi_script_ddp_scenario.py"
    result = _run([str(script), str(tmp_path)], env, timeout=500, python=python_executable)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    main = json.loads((tmp_path / "rank0.json").read_text())
    child = json.loads((tmp_path / "rank1.json").read_text())
    # Eager mode, as current Gaudi software: step markers do nothing, the graph API is missing with a clear sentence.
    assert main["is_lazy"] is False and main["eager_mark_steps_counted"] == 0
    assert main["graph_api_present"] is False
    assert "in eager mode" in main["graph_api_error"] and "PT_HPU_LAZY_MODE=1" in main["graph_api_error"]
    # The hpu device under autocast (the host's leaves it alone, HPU's lowers it) and torch.compile (no break).
    assert main["autocast_dtype"] == "torch.float32"
    assert main["hpu_autocast_dtype"] == "torch.bfloat16" and main["after_hpu_autocast_dtype"] == "torch.float32"
    assert main["compiled_hpu_autocast_dtype"] == "torch.bfloat16"
    assert main["compile_graphs"] == 1 and main["compile_graph_breaks"] == 0 and main["compiled_matches_eager"]
    # DeepSpeed finds an HPU, as on a Gaudi, and gets the stand-in's accelerator for it (DeepSpeed's own HPU
    # accelerator calls the bridge's device kernels, which the stand-in does not have).
    assert main["deepspeed_accelerator"] == ["hpu", "StandInHPUAccelerator"]
    # The process Lightning started re-ran the script: the start-up hook served habana_frameworks there too.
    assert child["launched_child"] is True and main["launched_child"] is False
    assert (main["rank"], child["rank"]) == (0, 1)
    assert (main["current_device"], child["current_device"]) == (0, 1)
    assert main["process_group"] == child["process_group"] == "hccl"
    assert main["weights"] == child["weights"]
    assert (main["tensor_device"], child["tensor_device"]) == ("hpu:0", "hpu:1")


def test_the_start_up_hook_installs_the_emulation_only_for_the_stand_in() -> None:
    probe = (
        "import sys\n"
        "finders = [type(f).__name__ for f in sys.meta_path]\n"
        "heavy = sorted({'torch', 'lightning', 'lightning_hpu'} & set(sys.modules))\n"
        "try:\n"
        "    import habana_frameworks\n"
        "    found = True\n"
        "except ModuleNotFoundError:\n"
        "    found = False\n"
        "print(finders.count('EmulationFinder'), heavy, found)\n"
    )
    chosen = _run(["-c", probe], _env())
    assert chosen.returncode == 0, chosen.stderr
    assert chosen.stdout.split() == ["1", "[]", "True"]  # installed at start-up, without importing anything heavy
    env = _env()
    del env["LIGHTNING_HPU_BACKEND"]
    plain = _run(["-c", probe], env)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.split() == ["0", "[]", "False"]  # without the stand-in, import habana_frameworks fails


@pytest.fixture
def private_meta_path(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """A copy of ``sys.meta_path`` without the emulation's finder, restored after the test."""
    path = [finder for finder in sys.meta_path if not isinstance(finder, (hook.EmulationFinder, hook.AfterImportHook))]
    monkeypatch.setattr(sys, "meta_path", path)
    monkeypatch.delenv("DS_ACCELERATOR", raising=False)
    # As in a process that has not imported habana_frameworks yet (the package's backend imports it when created).
    monkeypatch.delitem(sys.modules, "habana_frameworks", raising=False)
    return path


def test_a_gaudi_style_script_loads_torch_and_the_stand_in_only() -> None:
    probe = (
        "import sys\n"
        "import habana_frameworks.torch.core as htcore\n"
        "import habana_frameworks.torch.hpu as hthpu\n"
        "import torch\n"
        "x = torch.ones(4, device='hpu', requires_grad=True)\n"
        "(x * 2).sum().backward()\n"
        "htcore.mark_step()\n"
        "hthpu.synchronize()\n"
        "loaded = {name.split('.')[0] for name in sys.modules} & {'lightning', 'lightning_hpu', 'torchmetrics'}\n"
        "print(str(x.grad.device), hthpu.get_device_name(), sorted(loaded))\n"
    )
    done = _run(["-c", probe], _env())
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["hpu:0", "GAUDI2", "[]"]


def test_the_hook_needs_the_stand_in_and_follows_deepspeeds_accelerator_module(
    private_meta_path: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LIGHTNING_HPU_BACKEND", "hpu")
    assert hook.install_if_requested() is False
    assert not hook.installed() and "DS_ACCELERATOR" not in os.environ
    monkeypatch.setenv("LIGHTNING_HPU_BACKEND", "cpu")
    assert hook.install_if_requested() is True
    assert isinstance(private_meta_path[0], hook.AfterImportHook)  # first, for DeepSpeed's one module
    # Before the path finder, which would load a second copy of a stand-in submodule under the bridge's name.
    assert isinstance(private_meta_path[1], hook.EmulationFinder)
    assert "DS_ACCELERATOR" not in os.environ  # DeepSpeed chooses as on a Gaudi; the hook answers for "hpu"
    assert hook.install_if_requested() is True
    assert sum(isinstance(f, hook.EmulationFinder) for f in private_meta_path) == 1
    assert sum(isinstance(f, hook.AfterImportHook) for f in private_meta_path) == 1


def test_a_real_bridge_is_never_shadowed_nor_mistaken_for_the_emulation(
    private_meta_path: list[Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("LIGHTNING_HPU_BACKEND", "cpu")
    assert hook.install_if_requested() is True
    spec = importlib.util.find_spec("habana_frameworks")
    assert spec is not None and hook.is_emulated(spec)
    assert bridge_installed() is False  # the package never takes its own emulation for a Gaudi

    (tmp_path / "habana_frameworks" / "torch").mkdir(parents=True)
    (tmp_path / "habana_frameworks" / "torch" / "__init__.py").write_text("REAL = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    assert hook.real_bridge_findable()
    assert bridge_installed() is True
    spec = importlib.util.find_spec("habana_frameworks")
    assert spec is not None and not hook.is_emulated(spec)
    private_meta_path[:] = [
        f for f in private_meta_path if not isinstance(f, (hook.EmulationFinder, hook.AfterImportHook))
    ]
    monkeypatch.delenv("DS_ACCELERATOR", raising=False)
    assert hook.install_if_requested() is False and "DS_ACCELERATOR" not in os.environ


def test_the_start_up_modules_import_only_the_standard_library() -> None:
    """What runs at every Python start (the ``.pth`` line, torch's entry point) stays cheap: the standard library and
    the ``startup`` package itself, at module level and inside functions alike."""
    folder = Path(hook.__file__).parent
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                assert top in sys.stdlib_module_names or name.startswith("gaudi_standin.startup"), (path.name, name)
