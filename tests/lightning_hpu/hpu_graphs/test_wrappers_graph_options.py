"""The graph wrappers' options: each one the bridge's function takes, declared once, checked before any work, passed on
to the bridge; and the wrapped forward keeps its signature."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from lightning_hpu.hpu_graphs import ModuleCacher, make_graphed_callables, wrap_in_hpu_graph
from tests.helpers.standin import counters as standin_counters


@pytest.mark.parametrize(
    ("disable_tensor_cache", "dry_run", "passed"), [(True, None, True), (False, None, False), (True, False, False)]
)
def test_wrap_in_hpu_graph_passes_the_bridge_a_bool_dry_run(
    lazy_standin, monkeypatch: pytest.MonkeyPatch, disable_tensor_cache: bool, dry_run: bool | None, passed: bool
) -> None:
    """``dry_run=None`` (newer bridges choose) reaches the bridge as ``disable_tensor_cache``: 1.19 wants a bool."""
    import habana_frameworks.torch.hpu as hthpu

    seen: dict[str, object] = {}

    def bridge_wrap_in_hpu_graph(module: nn.Module, **options: object) -> nn.Module:
        seen.update(options)
        return module

    monkeypatch.setattr(hthpu, "wrap_in_hpu_graph", bridge_wrap_in_hpu_graph)
    wrap_in_hpu_graph(nn.Identity(), disable_tensor_cache=disable_tensor_cache, dry_run=dry_run)
    assert seen["dry_run"] is passed and seen["disable_tensor_cache"] is disable_tensor_cache


class _Keyworded(nn.Module):
    """A forward with named and keyword-only parameters, as Transformers' models have."""

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, *, scale: float = 1.0):
        return input_ids * scale if attention_mask is None else input_ids * attention_mask * scale


def test_graph_wrappers_keep_the_wrapped_forwards_signature(lazy_standin) -> None:
    """Callers that inspect ``forward`` (Transformers' ``generate`` checks its model kwargs so) see the module's own."""
    import inspect

    expected = list(inspect.signature(_Keyworded().forward).parameters)
    inference = wrap_in_hpu_graph(_Keyworded())
    assert list(inspect.signature(inference.forward).parameters) == expected == ["input_ids", "attention_mask", "scale"]
    x = torch.ones(2, 3)
    torch.testing.assert_close(inference(x, attention_mask=torch.zeros(2, 3)), torch.zeros(2, 3))
    training = ModuleCacher(max_graphs=2)(_Keyworded().train())
    assert list(inspect.signature(training.forward).parameters) == expected


@pytest.mark.parametrize(
    ("function", "declared", "bridge_name"),
    [
        ("make_graphed_callables", "GraphedCallablesOptions", "make_graphed_callables"),
        ("ModuleCacher", "ModuleCacherOptions", "ModuleCacher.__call__"),
        ("wrap_in_hpu_graph", "InferenceGraphOptions", "wrap_in_hpu_graph"),
    ],
)
def test_the_declared_graph_options_are_the_bridge_functions_keywords(
    lazy_standin, function: str, declared: str, bridge_name: str
) -> None:
    """The one declaration of each function's options names exactly the keywords of the bridge's function (the
    stand-in serves the bridge's signatures), so no option a Gaudi has is missing and none is invented."""
    import inspect

    import habana_frameworks.torch.hpu as hthpu

    from lightning_hpu.runtime import graph_options

    bridge: object = hthpu
    for part in bridge_name.split("."):
        bridge = getattr(bridge, part)
    positional = {"self", "callables", "sample_args", "model", "module"}
    bridge_keywords = set(inspect.signature(bridge).parameters) - positional  # type: ignore[arg-type]
    ours = set(getattr(graph_options, declared).__annotations__)
    if function == "wrap_in_hpu_graph":
        ours |= {"dry_run"}  # a keyword of its own: None lets the bridge choose
    assert ours == bridge_keywords


def test_a_misspelled_graph_option_is_refused_before_any_work(lazy_standin) -> None:
    model = nn.Linear(8, 4)
    before = model.forward
    with pytest.raises(TypeError, match=r"unexpected keyword argument `warmup`: its options are warmups,"):
        make_graphed_callables(model, (torch.randn(2, 8),), warmup=2)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="`max_graph`"):
        wrap_in_hpu_graph(model, max_graph=2)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="`lfu`"):
        ModuleCacher(2)(model, lfu=True)  # type: ignore[call-arg]
    assert model.forward == before and standin_counters().graph_captures == 0


def test_every_graph_option_reaches_the_bridge(lazy_standin, monkeypatch: pytest.MonkeyPatch) -> None:
    import habana_frameworks.torch.hpu as hthpu

    seen: dict[str, object] = {}

    def bridge_make_graphed_callables(callables: object, sample_args: object, **options: object) -> object:
        seen.update(options)
        return callables

    monkeypatch.setattr(hthpu, "make_graphed_callables", bridge_make_graphed_callables)
    options = {"warmups": 2, "allow_unused_input": True, "asynchronous": True, "disable_tensor_cache": True}
    make_graphed_callables(nn.Linear(8, 4), (torch.randn(2, 8),), dry_run=True, **options)  # type: ignore[arg-type]
    assert seen == {**options, "dry_run": True}
