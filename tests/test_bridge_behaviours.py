"""Behaviours of the bridge's device that the stand-in matches (issue 34): ``index_copy_`` on ``hpu`` takes its
index from the host, as the bridge's does, while a host tensor elsewhere in a device op is still refused.
"""

from __future__ import annotations

import pytest
import torch

import gaudi_standin.bridge.torch_package  # noqa: F401 (the hpu device)

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
