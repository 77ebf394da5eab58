"""The bridge's module layout on the stand-in: packages where the bridge has packages, and the names its own tests
reach (``core.quantization``, ``compile_backend.compilers``/``recipe_compiler``/``passes``/``shared_layer``,
``dynamo.debug_utils.logger``, ``utils.debug.logger``, ``_hpex_C``), each doing what the bridge's does."""

from __future__ import annotations

import importlib

import pytest
import torch

from gaudi_standin.emulator import machine


@pytest.mark.parametrize(
    "package",
    [
        "habana_frameworks.torch.core",
        "habana_frameworks.torch.utils.debug",
        "habana_frameworks.torch.dynamo.debug_utils",
        "habana_frameworks.torch.dynamo.compile_backend",
    ],
)
def test_the_bridges_packages_are_packages(standin: object, package: str) -> None:
    assert hasattr(importlib.import_module(package), "__path__")


@pytest.mark.parametrize(
    "name",
    [
        "habana_frameworks.torch.core.quantization",
        "habana_frameworks.torch.dynamo.compile_backend.compilers",
        "habana_frameworks.torch.dynamo.compile_backend.recipe_compiler",
        "habana_frameworks.torch.dynamo.compile_backend.passes",
        "habana_frameworks.torch.dynamo.compile_backend.shared_layer",
        "habana_frameworks.torch.dynamo.debug_utils.logger",
        "habana_frameworks.torch.utils.debug.logger",
        "habana_frameworks.torch._hpex_C",
    ],
)
def test_the_bridges_modules_import(standin: object, name: str) -> None:
    importlib.import_module(name)


def test_utils_is_an_attribute_of_the_imported_bridge(standin: object) -> None:
    ht = importlib.import_module("habana_frameworks.torch")
    assert ht.utils.debug is importlib.import_module("habana_frameworks.torch.utils.debug")
    htcore = importlib.import_module("habana_frameworks.torch.core")
    quantization = importlib.import_module("habana_frameworks.torch.core.quantization")
    assert htcore.hpu_inference_initialize is quantization.hpu_inference_initialize


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


def test_fused_norm_clips_in_place_and_refuses_other_norms(standin: object) -> None:
    hpex_c = importlib.import_module("habana_frameworks.torch._hpex_C")
    grads = [torch.full((2, 2), 3.0, device="hpu"), torch.full((4,), 4.0, device="hpu")]
    norm = hpex_c.fused_norm(grads, torch.ones(1, device="hpu"), 2.0)
    expected = (4 * 9.0 + 4 * 16.0) ** 0.5
    assert norm.shape == (1,) and abs(norm.item() - expected) < 1e-4
    scale = 1.0 / (expected + 1e-6)
    torch.testing.assert_close(grads[0].cpu(), torch.full((2, 2), 3.0 * scale))
    with pytest.raises(RuntimeError, match="unsupported norm_type for fused norm"):
        hpex_c.fused_norm(grads, torch.ones(1, device="hpu"), 1.0)
