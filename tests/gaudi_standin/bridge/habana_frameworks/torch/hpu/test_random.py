"""``habana_frameworks.torch.hpu.random``: the bridge's random module restores the HPU's random numbers."""

from __future__ import annotations

from typing import Any

import torch

from gaudi_standin.bridge.habana_frameworks.torch import hpu


def test_the_bridges_random_module_restores_hpu_random_numbers(standin: Any) -> None:
    import importlib

    random = importlib.import_module("habana_frameworks.torch.hpu.random")  # optimum-habana imports it by this name
    assert hpu.random is random
    random.manual_seed(7)
    assert random.initial_seed() == 7
    states = torch.hpu.get_rng_state_all()
    first = torch.randn(4, device="hpu")
    torch.hpu.set_rng_state_all(states)
    assert torch.equal(torch.randn(4, device="hpu"), first)
    random.set_rng_state(states[0])
    assert torch.equal(torch.randn(4, device="hpu"), first)
    torch.hpu.seed_all()
    assert random.initial_seed() != 7
