"""The graph helpers that hold no graph (``copy_to``, ``CachedParams``, ``TensorPacker``), as optimum-habana calls
them through the bridge's ``hpu`` and ``hpu.graphs``."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import gaudi_standin.bridge.habana_frameworks.torch  # noqa: F401 (the device and torch.ops.hpu)
from gaudi_standin.graphs import helpers as graph_helpers
from gaudi_standin.graphs.helpers import CachedParams, TensorPacker, copy_to

HPU = torch.device("hpu")


def test_copy_to_refreshes_static_inputs_in_place() -> None:
    static: dict[str, Any] = {
        "x": torch.zeros(2, device=HPU),
        "rest": [torch.zeros(1, device=HPU), 3],
        "t": (torch.zeros(1),),
    }
    kept = static["x"]
    copy_to(
        static, {"x": torch.ones(2, device=HPU), "rest": [torch.full((1,), 5.0, device=HPU), 4], "t": (torch.ones(1),)}
    )
    assert static["x"] is kept and kept.tolist() == [1.0, 1.0]
    assert static["rest"][0].item() == 5.0 and static["rest"][1] == 3  # a non-tensor value is not copied
    assert static["t"][0].item() == 1.0
    with pytest.raises(AssertionError, match="key 'y'"):
        copy_to({"x": torch.zeros(1)}, {"y": torch.zeros(1)})
    cached = CachedParams([kept], (kept * 2,), graph="g", asynchronous=True)
    assert (cached.graph_inputs[0], cached.graph, cached.out_tinfo_list, cached.asynchronous) == (kept, "g", None, True)


def test_tensor_packer_round_trips_nested_structures() -> None:
    a, b, c = torch.zeros(1), torch.ones(2), torch.full((3,), 2.0)
    nested = {"a": a, "pair": (b, 7), "more": [c, "text"], "none": None}
    tensors, metadata = TensorPacker().pack(nested)
    assert tensors == (a, b, c)
    assert repr(metadata["pair"][0]) == "#1"
    replaced = tuple(t + 1 for t in tensors)
    out = TensorPacker().unpack(replaced, metadata)
    assert out["a"] is replaced[0] and out["pair"][0] is replaced[1] and out["more"][0] is replaced[2]
    assert out["pair"][1] == 7 and out["more"][1] == "text" and out["none"] is None
    assert graph_helpers.__all__ == ["CachedParams", "TensorPacker", "copy_to"]
