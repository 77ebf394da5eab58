"""Where the bridge's device kernels accept what a CPU kernel refuses, the stand-in's device computes what they do:
``trunc``/``floor``/``ceil`` of a bool tensor are the identity (the bridge's rounding kernel for every integral
dtype), and ``index_copy_`` whose source shares memory with its destination reads the source before writing."""

from __future__ import annotations

import pytest
import torch


@pytest.mark.parametrize("op", ["trunc", "floor", "ceil"])
def test_rounding_a_bool_tensor_is_the_identity(standin: object, op: str) -> None:
    values = torch.tensor([True, False, True])
    device = values.to("hpu")
    assert getattr(device, op)().cpu().tolist() == values.tolist()
    out = torch.empty(0, dtype=torch.bool, device="hpu")
    getattr(torch, op)(device, out=out)
    assert out.cpu().tolist() == values.tolist()
    in_place = device.clone()
    assert getattr(in_place, f"{op}_")() is in_place and in_place.cpu().tolist() == values.tolist()
    with pytest.raises(NotImplementedError):  # the host keeps its own rule
        getattr(values, op)()
    assert (
        getattr(torch.tensor([1.5, -1.5], device="hpu"), op)().cpu().tolist()
        == getattr(torch.tensor([1.5, -1.5]), op)().tolist()
    )


def test_index_copy_reads_an_overlapping_source_before_writing(standin: object) -> None:
    cache = torch.arange(8.0).reshape(4, 2).to("hpu")
    cache.index_copy_(0, torch.tensor([1, 2]), cache[0:2])  # rows 0 and 1 into rows 1 and 2
    assert cache.cpu().tolist() == [[0.0, 1.0], [0.0, 1.0], [2.0, 3.0], [6.0, 7.0]]
