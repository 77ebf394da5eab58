"""make_graphed_callables, ModuleCacher and wrap_in_hpu_graph on the stand-in."""

from __future__ import annotations

import weakref

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from lightning_hpu.hpu_graphs import (
    HPUGraphsUnavailableError,
    ModuleCacher,
    make_graphed_callables,
    wrap_in_hpu_graph,
)


def _mlp(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4))


def _train(model: nn.Module, batches: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in batches:
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
        opt.step()


def _batches(sizes: list[int]) -> list[tuple[torch.Tensor, torch.Tensor]]:
    gen = torch.Generator().manual_seed(3)
    return [(torch.randn(n, 8, generator=gen), torch.randint(0, 4, (n,), generator=gen)) for n in sizes]


def test_make_graphed_callables_trains_like_eager(lazy_standin) -> None:
    batches = _batches([5] * 5)
    eager, graphed = _mlp(), _mlp()
    _train(eager, batches)
    graphed = make_graphed_callables(graphed, (torch.randn(5, 8),))
    _train(graphed, batches)
    for a, b in zip(eager.parameters(), graphed.parameters(), strict=True):
        torch.testing.assert_close(a, b)
    assert lazy_standin.counters.graph_captures == 2  # one forward graph, one backward graph
    assert lazy_standin.counters.graph_replays == 2 * len(batches)


def test_make_graphed_callables_checks_the_bridge_rules(lazy_standin) -> None:
    model = _mlp()
    model.register_forward_hook(lambda *_: None)
    with pytest.raises(HPUGraphsUnavailableError, match="hooks"):
        make_graphed_callables(model, (torch.randn(2, 8),))
    with pytest.raises(TypeError, match="tuple of tensors"):
        make_graphed_callables(_mlp(), torch.randn(2, 8))
    with pytest.raises(ValueError, match="warmups"):
        make_graphed_callables(_mlp(), (torch.randn(2, 8),), warmups=-1)
    bad = _mlp()
    bad.register_buffer("scale", torch.ones(1, requires_grad=True))
    with pytest.raises(HPUGraphsUnavailableError, match="buffer 'scale'"):
        make_graphed_callables(bad, (torch.randn(2, 8),))


def test_module_cacher_captures_once_per_shape_and_evicts_the_least_recently_used(lazy_standin) -> None:
    batches = _batches([4, 6, 4, 6, 4, 8, 4, 6])
    eager = _mlp()
    _train(eager, batches)
    cached = ModuleCacher(max_graphs=2)(model=_mlp(), inplace=True)
    _train(cached, batches[:6])
    counters = lazy_standin.counters
    # 4 and 6 captured, three hits; the 8-row batch is captured and evicts 6, the least recently used key.
    assert (counters.graph_cache_inserts, counters.graph_cache_hits, counters.graph_cache_evictions) == (3, 3, 1)
    assert cached.graph_cacher.num_graphs == 2
    _train(cached, batches[6:])
    # 4 is still cached (a hit); 6, evicted, is captured anew and evicts 8.
    assert (counters.graph_cache_inserts, counters.graph_cache_hits, counters.graph_cache_evictions) == (4, 4, 2)
    assert counters.graph_cache_uncached == 0
    assert counters.graph_captures == 2 * 4  # a forward and a backward graph per insert
    assert counters.graph_replays == 2 * len(batches)
    assert cached.graph_cacher.num_graphs == 2
    for a, b in zip(eager.parameters(), cached.parameters(), strict=True):
        torch.testing.assert_close(a, b)


def test_module_cacher_trains_like_eager_while_evicting_every_step(lazy_standin) -> None:
    """Three alternating shapes with room for two: every step evicts a training graph and captures another."""
    batches = _batches([3, 5, 7] * 3)
    eager, cached = _mlp(), ModuleCacher(max_graphs=2)(_mlp())
    _train(eager, batches)
    _train(cached, batches)
    for a, b in zip(eager.parameters(), cached.parameters(), strict=True):
        torch.testing.assert_close(a, b)
    counters = lazy_standin.counters
    assert (counters.graph_cache_inserts, counters.graph_cache_hits, counters.graph_cache_evictions) == (9, 0, 7)


def test_module_cacher_eviction_keeps_a_pending_backward_valid(lazy_standin) -> None:
    """A graph evicted between its forward and its backward still computes that backward correctly."""
    x3, x5 = torch.randn(3, 8), torch.randn(5, 8)
    eager, cached = _mlp(), ModuleCacher(max_graphs=1)(_mlp())
    for model in (eager, cached):
        (model(x3).pow(2).sum() + model(x5).pow(2).sum()).backward()  # the 5-row forward evicts the 3-row graph
    assert lazy_standin.counters.graph_cache_evictions == 1
    for a, b in zip(eager.parameters(), cached.parameters(), strict=True):
        torch.testing.assert_close(a.grad, b.grad)


def test_evicted_graphs_release_their_tensors(lazy_standin) -> None:
    """Both caches hold the first call's inputs as static buffers; eviction drops them."""
    first = torch.randn(3, 8)
    held = weakref.ref(first)
    cached = ModuleCacher(max_graphs=1)(_mlp())
    cached(first).sum().backward()
    del first
    assert held() is not None  # the graph's static input
    cached(torch.randn(5, 8)).sum().backward()
    assert held() is None

    first = torch.randn(3, 8)
    held = weakref.ref(first)
    wrapped = wrap_in_hpu_graph(_mlp().eval(), max_graphs=1)
    with torch.no_grad():
        wrapped(first)
        del first
        assert held() is not None
        wrapped(torch.randn(5, 8))
    assert held() is None


def test_module_cacher_gradient_accumulation_needs_its_mode(lazy_standin) -> None:
    """Graphed gradients live in static buffers that autograd may adopt as ``.grad``; accumulating over
    several backwards needs ``have_grad_accumulation`` and ``set_iteration_count`` (the first micro-batch has
    its own graph)."""
    xs = [torch.randn(3, 8) for _ in range(4)]

    def accumulate(model: nn.Module, mark: bool) -> torch.Tensor:
        for i, x in enumerate(xs):
            if mark:
                model.set_iteration_count(i % 2)
            if i % 2 == 0:
                model.zero_grad(set_to_none=True)
            model(x).pow(2).sum().backward()
        return model[0].weight.grad.clone()

    expected = accumulate(_mlp(), mark=False)
    plain = accumulate(ModuleCacher(4)(_mlp()), mark=True)
    with_mode = accumulate(ModuleCacher(4)(_mlp(), have_grad_accumulation=True), mark=True)
    torch.testing.assert_close(with_mode, expected)
    assert not torch.allclose(plain, expected)  # the device's behaviour without the mode, reproduced


def test_module_cacher_caches_only_training_with_grad(lazy_standin) -> None:
    model = ModuleCacher(max_graphs=4)(_mlp())
    x = torch.randn(3, 8)
    model.eval()
    model(x)
    model.train()
    with torch.no_grad():
        model(x)
    assert lazy_standin.counters.graph_cache_inserts == 0
    assert lazy_standin.counters.graph_cache_uncached == 2
    model(x).sum().backward()
    assert lazy_standin.counters.graph_cache_inserts == 1


def test_module_cacher_lfu_keeps_the_most_frequent_shapes(lazy_standin) -> None:
    model = ModuleCacher(max_graphs=1)(_mlp(), use_lfu=True)
    model.capture_start()
    for rows in (2, 3, 3):
        model(torch.randn(rows, 8))
    model.capture_end()
    model(torch.randn(2, 8))
    model(torch.randn(3, 8))
    assert lazy_standin.counters.graph_cache_inserts == 1  # only the 3-row shape, seen most often


def test_module_cacher_handles_keyword_and_structured_outputs(lazy_standin) -> None:
    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor, scale: float = 1.0) -> dict[str, torch.Tensor]:
            return {"out": self.lin(x) * scale, "skip": x}

    net = Net()
    reference = {k: v.detach().clone() for k, v in net(torch.ones(2, 4), scale=2.0).items()}
    cached = ModuleCacher(max_graphs=3)(Net())
    cached.load_state_dict(net.state_dict())
    first = cached(torch.ones(2, 4), scale=2.0)
    torch.testing.assert_close(first["out"].detach(), reference["out"])
    cached(torch.ones(2, 4), scale=3.0)  # a new non-tensor value is a new key
    assert lazy_standin.counters.graph_cache_inserts == 2
    with pytest.raises(ValueError, match="max_graphs"):
        ModuleCacher(max_graphs=0)


def test_wrap_in_hpu_graph_replays_per_shape_and_evicts_the_least_recently_used(lazy_standin) -> None:
    model = _mlp().eval()
    reference = _mlp().eval()
    wrapped = wrap_in_hpu_graph(model, max_graphs=2)
    counters = lazy_standin.counters
    with torch.no_grad():
        for rows in (3, 3, 5, 3, 7):
            x = torch.randn(rows, 8)
            torch.testing.assert_close(wrapped(x), reference(x))
        # 7 was captured and evicted 5, the least recently used key.
        assert (counters.graph_cache_inserts, counters.graph_cache_hits, counters.graph_cache_evictions) == (3, 2, 1)
        for rows in (5, 7, 3):  # 5 is captured anew (evicting 3), 7 hits, 3 is captured anew (evicting 5)
            x = torch.randn(rows, 8)
            torch.testing.assert_close(wrapped(x), reference(x))
        out = wrapped(torch.randn(3, 8), bypass_hpu_graphs=True)
    assert out.shape == (3, 4)
    assert (counters.graph_cache_inserts, counters.graph_cache_hits, counters.graph_cache_evictions) == (5, 3, 3)
    assert counters.graph_cache_uncached == 0
    assert counters.graph_captures == 5
    assert counters.graph_replays == 3
    wrapped.clear_cache()
    with torch.no_grad():
        wrapped(torch.randn(3, 8))
    assert counters.graph_cache_inserts == 6
    assert counters.graph_cache_evictions == 3  # clear_cache dropped the graphs; nothing had to be evicted


def test_wrap_in_hpu_graph_outputs_are_static(lazy_standin) -> None:
    """Replays write into the same output tensors: keep a copy of outputs you hold across calls."""
    wrapped = wrap_in_hpu_graph(nn.Identity())
    first = wrapped(torch.zeros(2))
    second = wrapped(torch.ones(2))
    assert second is first
    torch.testing.assert_close(first, torch.ones(2))


def test_wrap_in_hpu_graph_rejects_bad_arguments(lazy_standin) -> None:
    with pytest.raises(TypeError, match=r"torch\.nn\.Module"):
        wrap_in_hpu_graph(lambda x: x)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_graphs"):
        wrap_in_hpu_graph(nn.Identity(), max_graphs=0)
    with pytest.raises(HPUGraphsUnavailableError, match=r"torch\.compile"):
        wrap_in_hpu_graph(torch.compile(nn.Linear(2, 2)))  # type: ignore[arg-type]
