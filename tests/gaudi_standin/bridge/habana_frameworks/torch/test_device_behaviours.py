"""Behaviours of the bridge's device that the stand-in matches (issue 34): ``index_copy_`` on ``hpu`` takes its
index from the host, as the bridge's does, while a host tensor elsewhere in a device op is still refused.
"""

from __future__ import annotations

import pytest
import torch

import gaudi_standin.bridge.habana_frameworks.torch  # noqa: F401 (the hpu device)

HPU = torch.device("hpu")


def test_index_copy_takes_a_host_index() -> None:
    target = torch.zeros(4, 3, device=HPU)
    source = torch.arange(6.0).reshape(2, 3)
    target.index_copy_(0, torch.tensor([3, 1]), source.to(HPU))
    expected = torch.zeros(4, 3).index_copy_(0, torch.tensor([3, 1]), source)
    assert target.device.type == "hpu"
    torch.testing.assert_close(target.cpu(), expected)
    out = target.index_copy(1, torch.tensor([0]), torch.full((4, 1), 9.0, device=HPU))
    assert out.device.type == "hpu"
    torch.testing.assert_close(out.cpu(), expected.index_copy(1, torch.tensor([0]), torch.full((4, 1), 9.0)))


def test_a_host_tensor_elsewhere_is_still_refused() -> None:
    target = torch.zeros(4, 3, device=HPU)
    with pytest.raises(RuntimeError, match="same device"):
        target.index_copy_(0, torch.tensor([1], device=HPU), torch.ones(1, 3))  # the source on the host
    with pytest.raises(RuntimeError, match="same device"):
        target.index_select(0, torch.tensor([1]))


def _dropout_model() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.5)).to(HPU)


def _train_outputs(model: torch.nn.Module, steps: int) -> list[torch.Tensor]:
    outputs = []
    x = torch.ones(2, 4, device=HPU)
    for _ in range(steps):
        y = model(x)
        y.sum().backward()
        outputs.append(y.detach().cpu())
    return [*outputs, torch.rand(3)]  # and the generator's state after the run


def test_random_ops_in_a_module_cacher_replay_match_eager(monkeypatch: pytest.MonkeyPatch) -> None:
    from gaudi_standin.emulator import machine as runtime
    from gaudi_standin.graphs.bridge_api import ModuleCacher

    monkeypatch.setenv("PT_HPU_LAZY_MODE", "1")  # the bridge's ModuleCacher graphs training in lazy mode only
    torch.manual_seed(0)
    eager = _train_outputs(_dropout_model(), 3)
    torch.manual_seed(0)
    counters = runtime.current().counters
    replays = counters.graph_replays
    cached = _train_outputs(ModuleCacher(max_graphs=2)(model=_dropout_model(), inplace=False), 3)
    assert counters.graph_replays - replays >= 3  # the steps ran as graphs
    for mine, reference in zip(cached, eager, strict=True):
        torch.testing.assert_close(mine, reference, rtol=0, atol=0)
    assert not torch.equal(cached[0], cached[1])  # each replay draws new random numbers


def test_an_hpu_graph_replay_draws_random_numbers_as_an_eager_run() -> None:
    from gaudi_standin.graphs.bridge_api import HPUGraph, graph

    static = torch.zeros(5, device=HPU)
    torch.manual_seed(1)
    eager = [torch.rand(5, device=HPU).cpu() for _ in range(3)]
    torch.manual_seed(1)
    hpu_graph = HPUGraph()
    with graph(hpu_graph):
        static.copy_(torch.rand(5, device=HPU))
    replays = []
    for _ in range(3):
        hpu_graph.replay()
        replays.append(static.cpu())
    for mine, reference in zip(replays, eager, strict=True):
        torch.testing.assert_close(mine, reference, rtol=0, atol=0)


def test_a_graph_replays_an_op_whose_result_was_reshaped_in_place() -> None:
    from gaudi_standin.graphs.bridge_api import HPUGraph, graph

    # matmul of a vector runs mm on a [1, n] view and squeezes the result in place: the graph keeps the squeezed
    # tensor, and a replay writes the mm result into it in the shape mm gave it.
    weight = torch.randn(4, 3, device=HPU)
    static_x = torch.randn(4, device=HPU)
    hpu_graph = HPUGraph()
    with graph(hpu_graph):
        out = torch.matmul(static_x, weight)
    for _ in range(2):
        fresh = torch.randn(4)
        static_x.copy_(fresh.to(HPU))
        hpu_graph.replay()
        assert out.shape == (3,)
        torch.testing.assert_close(out.cpu(), fresh @ weight.cpu())


def test_a_graph_over_fp8_layers_replays() -> None:
    from gaudi_standin.bridge.habana_frameworks.torch.hpex.experimental import transformer_engine as te
    from gaudi_standin.graphs.bridge_api import HPUGraph, graph

    torch.manual_seed(2)
    layer = te.Linear(8, 3).to(HPU)
    static_x = torch.randn(8, device=HPU)
    hpu_graph = HPUGraph()
    with graph(hpu_graph), te.fp8_autocast(enabled=True):
        out = layer(static_x)
    fresh = torch.randn(8)
    static_x.copy_(fresh.to(HPU))
    hpu_graph.replay()
    assert layer.bias is not None
    expected = fresh @ layer.weight.detach().cpu().t() + layer.bias.detach().cpu()
    assert out.shape == (3,)
    torch.testing.assert_close(out.detach().cpu(), expected, rtol=0.15, atol=0.15)  # fp8's precision
