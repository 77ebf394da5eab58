"""The bridge's module layout on the stand-in: packages where the bridge has packages, and the names its own tests
reach (``core.quantization``, ``compile_backend.compilers``/``recipe_compiler``/``passes``/``shared_layer``,
``dynamo.debug_utils.logger``, ``utils.debug.logger``, ``_hpex_C``), each doing what the bridge's does."""

from __future__ import annotations

import importlib

import pytest
import torch


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
