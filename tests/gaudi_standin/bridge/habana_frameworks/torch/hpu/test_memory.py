"""``habana_frameworks.torch.hpu.memory``: the emulated HBM's figures, under the bridge's names and its old ones."""

from __future__ import annotations

import importlib

import pytest
import torch

import gaudi_standin.bridge.habana_frameworks.torch  # noqa: F401 (the device and torch.ops.hpu)
from gaudi_standin.bridge.habana_frameworks.torch import hpu

HPU = torch.device("hpu")


@pytest.mark.usefixtures("standin")
def test_the_memory_module_reports_the_emulated_hbm() -> None:
    """``habana_frameworks.torch.hpu.memory``, the bridge's module of the figures ``hpu`` exposes."""
    memory = importlib.import_module("habana_frameworks.torch.hpu.memory")
    assert hpu.memory is memory and memory.memory_allocated is hpu.memory_allocated
    before = memory.memory_allocated()
    tensor = torch.empty(1000, device=HPU)  # 4,000 bytes
    assert memory.memory_allocated() - before == 4000 and memory.max_memory_allocated() >= before + 4000
    limit = memory.memory_stats()["Limit"]
    assert memory.mem_get_info() == (limit - memory.memory_allocated(), limit)
    with pytest.warns(FutureWarning, match="renamed to torch.hpu.memory_reserved"):
        assert memory.memory_cached() == limit == memory.memory_reserved()
    with pytest.warns(FutureWarning, match="renamed to torch.hpu.max_memory_reserved"):
        assert memory.max_memory_cached() == limit
    del tensor
    assert memory.memory_allocated() == before
