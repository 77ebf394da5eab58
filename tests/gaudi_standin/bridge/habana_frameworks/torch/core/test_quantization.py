"""``habana_frameworks.torch.core.quantization`` on the stand-in: a model's state marked as constants (one id per
tensor), and inference initialization marking in lazy mode only, as the bridge's."""

from __future__ import annotations

import importlib

import torch

from gaudi_standin.emulator import machine


def test_marking_a_models_state_as_constants_gives_each_tensor_one_id(lazy_standin: object) -> None:
    quantization = importlib.import_module("habana_frameworks.torch.core.quantization")
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.BatchNorm1d(2)).to("hpu")
    before = quantization._get_marked_const_count()
    quantization._mark_params_as_const(model)
    marked = quantization._get_marked_const_count() - before
    assert marked == len(model.state_dict())  # parameters and buffers
    quantization._mark_params_as_const(model)  # already marked: the same ids
    assert quantization._get_marked_const_count() - before == marked
    quantization._mark_params_as_const(torch.nn.Linear(2, 2, bias=False), only_scales=True)  # no "scale" names
    assert quantization._get_marked_const_count() - before == marked
    x = torch.ones(3, 2, device="hpu")
    model.eval()
    torch.testing.assert_close(model(x).cpu(), model.cpu()(x.cpu()))  # constants compute as before


def test_inference_initialize_marks_in_lazy_mode_only(standin: object) -> None:
    quantization = importlib.import_module("habana_frameworks.torch.core.quantization")
    before = quantization._get_marked_const_count()
    quantization.hpu_inference_initialize(torch.nn.Linear(2, 2).to("hpu"))
    assert quantization._get_marked_const_count() == before  # eager mode: the bridge marks in lazy mode only
    assert not machine.current().is_lazy()
