"""A dry-run capture (the bridge's ``dry_run``, which its graph wrappers use whenever the tensor cache is off) records
the graph and leaves the program's tensors as they were: only replays update them, so a call that captures and
replays updates state once, as on a Gaudi."""

from __future__ import annotations

import pytest
import torch

from gaudi_standin.bridge.habana_frameworks.torch import hpu
from gaudi_standin.graphs.standin_graph import StandInGraph, standin_capture


@pytest.mark.parametrize("dry_run", [True, False])
def test_a_dry_run_capture_undoes_its_writes_to_existing_tensors(standin: object, dry_run: bool) -> None:
    counter = torch.zeros(3, device="hpu")
    graph = StandInGraph()
    with standin_capture(graph, dry_run=dry_run):
        counter[1:].add_(1.0)  # through a view of the existing tensor
        fresh = counter * 2
    assert counter.tolist() == ([0.0, 0.0, 0.0] if dry_run else [0.0, 1.0, 1.0])
    graph.replay()
    assert counter.tolist() == ([0.0, 1.0, 1.0] if dry_run else [0.0, 2.0, 2.0])
    assert fresh.tolist() == counter.mul(2).tolist()  # the graph's own memory keeps what the replay computed


class _Counting(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("calls", torch.zeros(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls.add_(1)
        return x * 2


@pytest.mark.parametrize("disable_tensor_cache", [True, False])
def test_an_inference_graph_without_tensor_cache_updates_state_once_per_call(
    lazy_standin: object, disable_tensor_cache: bool
) -> None:
    module = hpu.wrap_in_hpu_graph(_Counting().to("hpu"), disable_tensor_cache=disable_tensor_cache)
    for call in range(1, 4):
        out = module(torch.full((2,), float(call), device="hpu"))
        assert out.tolist() == [2.0 * call] * 2
        assert module.calls.item() == call
