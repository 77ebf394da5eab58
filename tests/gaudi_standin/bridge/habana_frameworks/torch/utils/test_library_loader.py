"""The emulated bridge's ``utils.library_loader``: nothing to load on the stand-in, and the device is there."""

from __future__ import annotations

from typing import Any

import torch

from gaudi_standin.bridge.habana_frameworks.torch.utils import library_loader


def test_library_loader_loads_nothing_and_finds_the_device(standin: Any) -> None:
    assert library_loader.is_habana_available() is True
    assert library_loader.load_habana_module() is None
    assert library_loader.load_habana_profiler() is None
    assert torch.ones(1, device="hpu").device.type == "hpu"
