"""The stand-in's graph-cache keys: the bridge's key (shapes, view layout, values; no dtype) and one-pass binding."""

from __future__ import annotations

from collections import OrderedDict, namedtuple
from typing import Any

import pytest
import torch

from gaudi_standin.graphs.keys import ForwardSignature, call_key, rebuild, walk

Pair = namedtuple("Pair", ["a", "b"])


def _key(*args: Any, **kwargs: Any) -> Any:
    return call_key(args, kwargs, [])


def test_key_is_shapes_view_layout_and_values_without_dtype() -> None:
    x = torch.randn(4, 4)
    assert _key(x) == _key(torch.zeros(4, 4, dtype=torch.bfloat16))  # no dtype
    assert _key(x) == _key(torch.randn(4, 4, requires_grad=True))  # no requires_grad
    assert _key(x) != _key(torch.randn(4, 5))
    assert _key(x.t()) != _key(x)  # a view with another layout
    assert _key(x[1:3]) != _key(x[:2])  # same shape and strides, another offset
    assert _key(x[:2]) == _key(torch.randn(4, 4)[:2])  # the same view of another tensor
    assert _key(x, scale=2.0) != _key(x, scale=3.0)
    assert _key(x, 2.0) != _key(x, scale=2.0)  # as the call was made (wrap_in_hpu_graph)
    # Values never pass for tensors, and containers keep their type.
    assert _key(torch.Size([4, 4])) != _key(x)
    assert _key([x]) != _key((x,))
    assert _key({"a": x}) != _key({"b": x})
    assert _key(None) != _key(x)
    plain = _key(x)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert _key(x) != plain  # the autocast state


def test_walk_collects_tensors_in_order_and_rebuild_puts_them_back() -> None:
    a, b, c = torch.ones(1), torch.ones(2), torch.ones(3)
    structure = (a, [b, 5], OrderedDict(k=c, n=None), Pair(a, "s"))
    found: list[torch.Tensor] = []
    walk(structure, found)
    assert [t.numel() for t in found] == [1, 2, 3, 1]
    fresh = [t * 7 for t in found]
    rebuilt = rebuild(structure, fresh)
    assert isinstance(rebuilt[2], OrderedDict) and isinstance(rebuilt[3], Pair)
    assert rebuilt[1][1] == 5 and rebuilt[3].b == "s" and rebuilt[2]["n"] is None
    assert rebuilt[0] is fresh[0] and rebuilt[2]["k"] is fresh[2] and rebuilt[3].a is fresh[3]


def test_forward_signature_binds_as_the_bridge_with_defaults_filled() -> None:
    def forward(x: torch.Tensor, mask: torch.Tensor | None = None, *, flag: bool = False) -> None: ...

    sig = ForwardSignature(forward, "Net")
    x = torch.ones(1)
    expected = (x, None, False)
    assert sig.bind((x,), {}) == expected
    assert sig.bind((), {"x": x}) == expected
    assert sig.bind((x, None), {"flag": False}) == expected
    assert sig.bind((x,), {"flag": True}) == (x, None, True)
    with pytest.raises(TypeError, match="missing a required argument: 'x'"):
        sig.bind((), {"mask": None})
    with pytest.raises(TypeError, match="multiple values for argument 'x'"):
        sig.bind((x,), {"x": x})
    with pytest.raises(TypeError, match="unexpected keyword argument 'flga'"):
        sig.bind((x,), {"flga": True})
    with pytest.raises(TypeError, match="too many positional arguments"):
        sig.bind((x, None, True), {})

    def with_extras(x: torch.Tensor, **extra: Any) -> Any:
        return x, extra

    extras = ForwardSignature(with_extras, "Net")
    values = extras.bind((x,), {"y": 1})
    assert values == (x, {"y": 1})
    assert extras.call(with_extras, values) == (x, {"y": 1})
