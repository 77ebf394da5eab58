"""The stand-in on a CUDA build of torch (PyPI's Linux builds, the oldest and newest CI legs): hpu is torch's
accelerator and CUDA is off, because the device library loads before ``torch._C``
(``gaudi_standin.startup.early_load``); where it cannot, one sentence says what to do. On a CPU build of torch the
early loading does nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import types
from typing import Any

import pytest
import torch

from gaudi_standin.startup import early_load
from lightning_hpu.support import env_report

CUDA_BUILD = torch.version.cuda is not None
only_on_cuda_builds = pytest.mark.skipif(not CUDA_BUILD, reason="this torch is a CPU build (the pinned leg)")

#: A backward pass on the host first (torch's autograd engine then sizes its device queues by the device count),
#: then one on the second HPU; prints where the gradient is, torch's accelerator and whether CUDA is available.
TRAIN_ON_HPU = textwrap.dedent(
    """
    import torch
    (torch.ones(2, requires_grad=True) * 2).sum().backward()
    x = torch.randn(4, 4, device="hpu:1", requires_grad=True)
    (x @ x).sum().backward()
    print(x.grad.device, torch.accelerator.current_accelerator(), torch.cuda.is_available())
    """
)


def test_the_finder_loads_once_at_torch_c_and_finds_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    monkeypatch.setattr(early_load, "load_before_torch_c", lambda: calls.append("load") or True)
    finder = early_load.TorchCFinder()
    assert finder.find_spec("torch.version") is None and calls == []
    assert finder.find_spec("torch._C") is None and finder.find_spec("torch._C") is None
    assert calls == ["load"]


def test_nothing_is_loaded_on_a_cpu_build_or_without_a_built_library(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_torch = types.ModuleType("torch")
    fake_torch.__version__ = "2.99.0+cu999"  # type: ignore[attr-defined]
    fake_torch.__file__ = "/nonexistent/torch/__init__.py"
    version = types.ModuleType("torch.version")
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    monkeypatch.setitem(sys.modules, "torch.version", version)
    version.cuda = None  # type: ignore[attr-defined]
    assert not early_load.load_before_torch_c()  # a CPU build
    version.cuda = "99.9"  # type: ignore[attr-defined]
    assert not early_load.load_before_torch_c()  # a CUDA build, but no library was built for this torch
    monkeypatch.setattr(
        "gaudi_standin.startup.device_cache.built_library", lambda version, abi: "/nonexistent/library.so"
    )
    assert not early_load.load_before_torch_c()  # loading fails: said in one line, never raised
    assert "did not load before torch._C" in capsys.readouterr().err


def test_installing_after_torch_was_imported_adds_no_finder(monkeypatch: pytest.MonkeyPatch) -> None:
    others = [finder for finder in sys.meta_path if not isinstance(finder, early_load.TorchCFinder)]
    monkeypatch.setattr(sys, "meta_path", others)
    early_load.install()  # torch is imported in this process: too late for the finder
    assert not any(isinstance(finder, early_load.TorchCFinder) for finder in sys.meta_path)
    monkeypatch.delitem(sys.modules, "torch")
    early_load.install()
    early_load.install()
    assert sum(isinstance(finder, early_load.TorchCFinder) for finder in sys.meta_path) == 1
    assert isinstance(sys.meta_path[0], early_load.TorchCFinder)


@only_on_cuda_builds
def test_on_a_cuda_build_hpu_is_the_accelerator_and_cuda_is_off(standin: Any) -> None:
    """This process started with LIGHTNING_HPU_BACKEND=cpu (scripts/test.sh): the library came before torch._C."""
    assert torch.ops.lightning_hpu_standin.cuda_hooks_registered()
    accelerator = torch.accelerator.current_accelerator()
    assert accelerator is not None and accelerator.type == "hpu"
    assert not torch.cuda.is_available()
    x = torch.randn(3, device="hpu", requires_grad=True)
    (x * 2).sum().backward()
    assert x.grad is not None and x.grad.device.type == "hpu"
    backend = dict(dict(env_report.collect().sections)["Backend"])
    assert backend["CUDA"].startswith("off in stand-in processes") and torch.__version__ in backend["CUDA"]


def test_the_preloaded_interpreter_trains_on_hpu(python_executable: str) -> None:
    """The suite's fork server imports torch before any stand-in process exists: on a CUDA build it must load the
    device library before torch too, or every fork keeps CUDA as the accelerator."""
    env = {**os.environ, "LIGHTNING_HPU_BACKEND": "cpu", "LIGHTNING_HPU_CPU_DEVICES": "2"}  # the server has one
    done = subprocess.run([python_executable, "-c", TRAIN_ON_HPU], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["hpu:1", "hpu", "False"], done.stdout


@only_on_cuda_builds
@pytest.mark.slow
def test_a_device_loaded_after_torch_chose_cuda_says_what_to_do() -> None:
    """As when the library was built only after torch loaded: the first use of hpu is refused in one sentence."""
    script = textwrap.dedent(
        """
        import sys
        from gaudi_standin.startup import early_load
        sys.meta_path[:] = [finder for finder in sys.meta_path if not isinstance(finder, early_load.TorchCFinder)]
        import torch
        torch.ones(1, device="hpu")
        """
    )
    env = {**os.environ, "LIGHTNING_HPU_BACKEND": "cpu"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0, done.stdout
    last_line = done.stderr.strip().splitlines()[-1]
    assert "is a CUDA build, and the CPU stand-in's hpu device loaded only after" in last_line, done.stderr[-3000:]
    assert "set LIGHTNING_HPU_BACKEND=cpu before Python starts" in last_line
    assert "CUDA driver" not in done.stderr
