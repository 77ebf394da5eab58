"""A recording ``habana_frameworks``: the package's bridge backend driven as on a Gaudi, each call written down."""

from __future__ import annotations

import importlib.machinery
import sys
import types

import pytest


def install_recording_bridge(monkeypatch: pytest.MonkeyPatch, calls: list[str]) -> None:
    """Installs a fake ``habana_frameworks`` (a GAUDI3 node of 8) whose functions append their names to ``calls``: what
    the bridge backend calls on a Gaudi, without one."""

    def recorder(name: str, result: object = None):  # type: ignore[no-untyped-def]
        def call(*args: object, **kwargs: object) -> object:
            calls.append(name)
            return result

        return call

    root = types.ModuleType("habana_frameworks")
    root.__spec__ = importlib.machinery.ModuleSpec(
        "habana_frameworks", None, origin="/usr/local/lib/python3.10/dist-packages/habana_frameworks/__init__.py"
    )
    torch_pkg = types.ModuleType("habana_frameworks.torch")
    core = types.ModuleType("habana_frameworks.torch.core")
    core.mark_step = recorder("mark_step")  # type: ignore[attr-defined]
    core.is_lazy = recorder("is_lazy", True)  # type: ignore[attr-defined]
    hpu = types.ModuleType("habana_frameworks.torch.hpu")
    hpu.is_available = recorder("is_available", True)  # type: ignore[attr-defined]
    hpu.device_count = recorder("device_count", 8)  # type: ignore[attr-defined]
    hpu.get_device_name = recorder("get_device_name", "GAUDI3")  # type: ignore[attr-defined]
    hpu.memory_stats = recorder("memory_stats", {"Limit": 5, "InUse": 1})  # type: ignore[attr-defined]
    hpu.synchronize = recorder("synchronize")  # type: ignore[attr-defined]
    root.torch = torch_pkg  # type: ignore[attr-defined]
    torch_pkg.core = core  # type: ignore[attr-defined]
    torch_pkg.hpu = hpu  # type: ignore[attr-defined]
    for name, module in {
        "habana_frameworks": root,
        "habana_frameworks.torch": torch_pkg,
        "habana_frameworks.torch.core": core,
        "habana_frameworks.torch.hpu": hpu,
    }.items():
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.delitem(sys.modules, "lightning_hpu.runtime.bridge", raising=False)
    monkeypatch.setattr("lightning_hpu.runtime.bridge_installed", lambda: True)
