"""``hpu.enable_optim_output_sif``/``disable_optim_output_sif``: the graph compiler's switch changes no result."""

from __future__ import annotations

import pytest
import torch
from torch import Tensor

import gaudi_standin.bridge.habana_frameworks.torch  # noqa: F401 (the device and torch.ops.hpu)
from gaudi_standin.bridge.habana_frameworks.torch import hpu

HPU = torch.device("hpu")


@pytest.mark.usefixtures("standin")
def test_the_optim_output_sif_switches_change_no_result() -> None:
    """``hpu.enable_optim_output_sif``/``disable_optim_output_sif``: the graph compiler's choice of output-shape
    inference for dynamic graphs; a compiled function gives the same values either way, for new sizes too."""

    def scaled_rows(x: Tensor) -> Tensor:
        return torch.softmax(x * 2.0, dim=-1).sum(dim=0)

    compiled = torch.compile(scaled_rows, backend="hpu_backend", dynamic=True)
    hpu.enable_optim_output_sif()
    try:
        for rows in (3, 5):
            x = torch.randn(rows, 4)
            assert torch.allclose(compiled(x.to(HPU)).cpu(), scaled_rows(x))
    finally:
        hpu.disable_optim_output_sif()
    x = torch.randn(7, 4)
    assert torch.allclose(compiled(x.to(HPU)).cpu(), scaled_rows(x))
