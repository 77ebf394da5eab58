"""make_graphed_callables, ModuleCacher and wrap_in_hpu_graph on the stand-in."""

from __future__ import annotations

import warnings
import weakref

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from gaudi_standin.emulator import machine as standin_runtime
from gaudi_standin.graphs.module_caches import HPUGraphDtypeWarning
from lightning_hpu.hpu_graphs import (
    HPUGraphsUnavailableError,
    ModuleCacher,
    make_graphed_callables,
    wrap_in_hpu_graph,
)
from tests.helpers.standin import counters as standin_counters


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
    assert standin_counters().graph_captures == 2  # one forward graph, one backward graph
    assert standin_counters().graph_replays == 2 * len(batches)


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


def test_make_graphed_callables_refuses_what_the_bridge_autograd_path_refuses(lazy_standin) -> None:
    x = torch.randn(3, 4, requires_grad=True)
    frozen = _mlp().requires_grad_(False)
    with pytest.raises(ValueError, match="no sample arg or parameter of `callables` requires grad"):
        make_graphed_callables(frozen, (torch.randn(3, 8),))
    with pytest.raises(ValueError, match=r"`callables\[1\]` requires grad"):
        make_graphed_callables((_mlp(), lambda t: t * 2), ((torch.randn(3, 8),), (torch.randn(3, 4),)))
    with pytest.raises(RuntimeError, match="No output of `callables` requires grad"):
        make_graphed_callables(lambda t: (t * 2).detach(), (x,))
    with pytest.raises(RuntimeError, match="allow_unused_input=True"):
        make_graphed_callables(lambda t, u: t * 2, (x, torch.randn(3, 4, requires_grad=True)))
    with pytest.raises(RuntimeError, match="output 1 does not require grad"):
        make_graphed_callables(lambda t: (t * 2, t.detach() + 1), (x,), warmups=1)
    with pytest.raises(TypeError, match="tensor or a tuple of tensors"):
        make_graphed_callables(lambda t: {"y": t * 2}, (x,))
    assert standin_counters().graph_replays == 0


def test_make_graphed_callables_accepts_what_the_bridge_accepts(lazy_standin) -> None:
    x = torch.randn(3, 4, requires_grad=True)
    # Without warmups, outputs that need no grad are fine: the backward differentiates the others.
    mixed = make_graphed_callables(lambda t: (t * 2, t.detach() + 1), (x,))
    given = torch.randn(3, 4, requires_grad=True)
    doubled, shifted = mixed(given)
    doubled.sum().backward()
    torch.testing.assert_close(given.grad, torch.full((3, 4), 2.0))
    torch.testing.assert_close(shifted, given.detach() + 1)
    # allow_unused_input: an unused input gets a zero gradient.
    unused = torch.randn(3, 4, requires_grad=True)
    graphed = make_graphed_callables(lambda t, u: t * 3, (x, unused), allow_unused_input=True)
    a, b = torch.randn(3, 4, requires_grad=True), torch.randn(3, 4, requires_grad=True)
    graphed(a, b).sum().backward()
    torch.testing.assert_close(a.grad, torch.full((3, 4), 3.0))
    torch.testing.assert_close(b.grad, torch.zeros(3, 4))


@pytest.mark.parametrize("cache", ["ModuleCacher", "wrap_in_hpu_graph"])
def test_a_full_cache_runs_new_shapes_uncached_and_never_evicts(lazy_standin, cache: str) -> None:
    """The bridge's policy: max_graphs=1 with 2, 3, 2 rows gives one capture, one uncached call and one hit."""
    reference = _mlp()
    model = ModuleCacher(max_graphs=1)(_mlp()) if cache == "ModuleCacher" else wrap_in_hpu_graph(_mlp(), max_graphs=1)
    first = torch.randn(2, 8)
    held = weakref.ref(first)
    counters = standin_counters()
    for x in (first, torch.randn(3, 8), torch.randn(2, 8)):
        torch.testing.assert_close(model(x), reference(x))
    assert (counters.graph_cache_inserts, counters.graph_cache_uncached, counters.graph_cache_hits) == (1, 1, 1)
    assert counters.graph_captures == (2 if cache == "ModuleCacher" else 1)  # a training graph has a backward too
    del first
    assert held() is not None  # the 2-row graph still holds its static input: nothing was evicted
    for _ in range(3):
        model(torch.randn(3, 8))
    assert counters.graph_cache_inserts == 1  # a full cache never makes room for a frequent newcomer
    assert counters.graph_cache_uncached == 4


def test_module_cacher_trains_like_eager_with_a_full_cache(lazy_standin) -> None:
    batches = _batches([4, 6, 4, 8, 6, 4, 8])
    eager, cached = _mlp(), ModuleCacher(max_graphs=2)(_mlp())
    _train(eager, batches)
    _train(cached, batches)
    for a, b in zip(eager.parameters(), cached.parameters(), strict=True):
        torch.testing.assert_close(a, b)
    counters = standin_counters()
    # 4 and 6 fill the cache; the 8-row batches run eagerly; 4 and 6 keep replaying.
    assert (counters.graph_cache_inserts, counters.graph_cache_hits, counters.graph_cache_uncached) == (2, 3, 2)
    assert cached.graph_cacher.num_graphs == 2
    assert counters.graph_replays == 2 * (2 + 3)  # forward and backward of every graphed call (captures replay too)


def test_module_cacher_keys_on_the_full_arguments_with_defaults(lazy_standin) -> None:
    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
            return self.lin(x) * scale

    cached = ModuleCacher(max_graphs=4)(Net())
    x = torch.randn(2, 4)
    cached(x)
    cached(x, scale=1.0)  # the default, given
    cached(x=x)  # by name
    cached(x, 1.0)
    counters = standin_counters()
    assert (counters.graph_cache_inserts, counters.graph_cache_hits) == (1, 3)
    with pytest.raises(TypeError, match="unexpected keyword argument 'sclae'"):
        cached(x, sclae=2.0)
    with pytest.raises(TypeError, match="cannot be hashed"):
        cached(x, scale={1.0})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="positional-only"):
        ModuleCacher(2)(_PositionalOnly())


class _PositionalOnly(nn.Module):
    def forward(self, x: torch.Tensor, /) -> torch.Tensor:
        return x


def test_cache_key_has_view_layout_but_no_dtype(lazy_standin) -> None:
    wrapped = wrap_in_hpu_graph(_mlp().eval())
    reference = _mlp().eval()
    counters = standin_counters()
    base = torch.randn(8, 8)
    with torch.no_grad():
        wrapped(base)
        wrapped(base.t())  # same shape, another view layout: its own graph
        fresh = base.t() * 2  # not a view: a plain layout on the device, whatever its strides on the CPU
        expected = reference(fresh)
        torch.testing.assert_close(wrapped(fresh), expected)  # replayed: copied into `base`, the graph's input
        assert (counters.graph_cache_inserts, counters.graph_cache_hits) == (2, 1)
        x64 = torch.randn(8, 8, dtype=torch.float64)
        with pytest.warns(HPUGraphDtypeWarning, match=r"captured for input dtypes \(float32\).*\(float64\)"):
            out = wrapped(x64)
        assert (counters.graph_cache_inserts, counters.graph_cache_hits) == (2, 2)  # replayed, not captured
        assert out.dtype == torch.float32  # the captured graph's dtype, as on a Gaudi
        torch.testing.assert_close(out, reference(x64.float()))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            wrapped(torch.randn(8, 8, dtype=torch.float64))  # warned once per graph and dtype
        with pytest.warns(HPUGraphDtypeWarning, match=r"\(bfloat16\)"):
            wrapped(torch.randn(8, 8, dtype=torch.bfloat16))


def test_module_cacher_replays_a_new_dtype_in_the_captured_one(lazy_standin) -> None:
    eager, cached = _mlp(), ModuleCacher(max_graphs=2)(_mlp())
    x, x64 = torch.randn(3, 8), torch.randn(3, 8, dtype=torch.float64)
    for model in (eager, cached):
        model(x).sum().backward()
        model.zero_grad(set_to_none=True)
    eager(x64.float()).sum().backward()
    with pytest.warns(HPUGraphDtypeWarning, match="float64"):
        out = cached(x64)
    out.sum().backward()
    assert standin_counters().graph_cache_inserts == 1
    assert out.dtype == torch.float32
    for a, b in zip(eager.parameters(), cached.parameters(), strict=True):
        torch.testing.assert_close(a.grad, b.grad)


def test_module_cacher_graphs_only_when_lazy_mode_is_exactly_one(lazy_standin, monkeypatch) -> None:
    """The bridge's ModuleCacher checks PT_HPU_LAZY_MODE == "1"; other lazy values run every call uncached."""
    from lightning_hpu.runtime import get_backend
    from tests.helpers.standin import reset_backend

    monkeypatch.setenv("PT_HPU_LAZY_MODE", "2")
    reset_backend()
    assert get_backend().is_lazy()
    model = ModuleCacher(max_graphs=2)(_mlp())
    model(torch.randn(3, 8)).sum().backward()
    counters = standin_runtime.current().counters
    assert (counters.graph_cache_inserts, counters.graph_cache_uncached) == (0, 1)


def test_module_cacher_counts_micro_batches_from_zero(lazy_standin) -> None:
    """As on the bridge, a fresh cacher is at micro-batch 0: the first call already uses the first-micro-batch graph."""
    model = ModuleCacher(max_graphs=4)(_mlp(), have_grad_accumulation=True)
    x = torch.randn(3, 8)
    model(x).sum().backward()
    model.set_iteration_count(1)
    model(x).sum().backward()
    counters = standin_counters()
    assert (counters.graph_cache_inserts, counters.graph_cache_hits) == (2, 0)
    model.set_iteration_count(0)
    model(x).sum().backward()
    assert (counters.graph_cache_inserts, counters.graph_cache_hits) == (2, 1)


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
    assert standin_counters().graph_cache_inserts == 0
    assert standin_counters().graph_cache_uncached == 2
    model(x).sum().backward()
    assert standin_counters().graph_cache_inserts == 1


def test_module_cacher_lfu_keeps_the_most_frequent_shapes(lazy_standin) -> None:
    model = ModuleCacher(max_graphs=1)(_mlp(), use_lfu=True)
    model.capture_start()
    for rows in (2, 3, 3):
        model(torch.randn(rows, 8))
    model.capture_end()
    model(torch.randn(2, 8))
    model(torch.randn(3, 8))
    assert standin_counters().graph_cache_inserts == 1  # only the 3-row shape, seen most often


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
    assert standin_counters().graph_cache_inserts == 2
    with pytest.raises(ValueError, match="max_graphs"):
        ModuleCacher(max_graphs=0)


def test_wrap_in_hpu_graph_replays_known_shapes_and_clear_cache_makes_room(lazy_standin) -> None:
    model = _mlp().eval()
    reference = _mlp().eval()
    wrapped = wrap_in_hpu_graph(model, max_graphs=2)
    counters = standin_counters()
    first = torch.randn(3, 8)
    held = weakref.ref(first)
    with torch.no_grad():
        for x in (first, torch.randn(3, 8), torch.randn(5, 8), torch.randn(7, 8), torch.randn(5, 8)):
            torch.testing.assert_close(wrapped(x), reference(x))
        out = wrapped(torch.randn(7, 8), bypass_hpu_graphs=True)
    assert out.shape == (7, 4)
    assert (counters.graph_cache_inserts, counters.graph_cache_hits, counters.graph_cache_uncached) == (2, 2, 1)
    assert (counters.graph_captures, counters.graph_replays) == (2, 2)
    del first
    assert held() is not None  # the 3-row graph's input buffer
    wrapped.clear_cache()
    assert held() is None  # clear_cache, the only way a graph leaves a cache, frees its tensors
    with torch.no_grad():
        wrapped(torch.randn(7, 8))
    assert counters.graph_cache_inserts == 3


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


def test_wrap_in_hpu_graph_without_tensor_cache_keeps_its_own_buffers(lazy_standin) -> None:
    model, reference = _mlp().eval(), _mlp().eval()
    wrapped = wrap_in_hpu_graph(model, disable_tensor_cache=True)
    first = torch.randn(3, 8)
    held = weakref.ref(first)
    with torch.no_grad():
        wrapped(input=first)
        del first
        assert held() is None  # the graph copied the keyword argument into a buffer of its own
        x = torch.randn(3, 8)
        torch.testing.assert_close(wrapped(input=x), reference(x))
    assert standin_counters().graph_cache_hits == 1
