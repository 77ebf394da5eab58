"""Transformer Engine's fp8 metadata on the stand-in: ``fp8_meta``, ``save_fp8_meta``/``load_fp8_meta`` around HPU
graph capture, measurement mode, and integer inputs, as the bridge's ``lazy/test_hpu_graph_fp8_te.py`` uses them."""

from __future__ import annotations

import torch

from gaudi_standin.bridge.habana_frameworks.torch import hpu
from gaudi_standin.bridge.habana_frameworks.torch.hpex.experimental import transformer_engine as te
from gaudi_standin.bridge.habana_frameworks.torch.hpex.experimental.transformer_engine.fp8 import (
    FP8GlobalStateManager,
)
from gaudi_standin.bridge.habana_frameworks.torch.hpex.experimental.transformer_engine.recipe import (
    DelayedScaling,
    Format,
)

RECIPE = DelayedScaling(fp8_format=Format.E5M2, amax_history_len=1, amax_compute_algo="max", margin=0)


def _layer() -> te.Linear:
    torch.manual_seed(12345)
    return te.Linear(4, 3, bias=True, params_dtype=torch.float32)


def _step(layer: torch.nn.Module, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    out = layer(x)
    out.sum().backward()
    return out.detach().cpu(), layer.weight.grad.detach().cpu().clone()


def test_fp8_meta_holds_the_scaling_state_and_load_restores_it_in_place(standin: object) -> None:
    layer = _layer()
    with te.fp8_autocast(enabled=True, fp8_recipe=RECIPE):
        _step(layer, torch.tensor([0.1, 0.2, 0.3, 0.4], device="hpu"))
        meta = layer.fp8_meta
        assert set(meta) == {"scaling_fwd", "scaling_bwd"}
        forward = meta["scaling_fwd"]
        scale, history = forward.scale, forward.amax_history
        assert history.shape == (1, 2) and scale.shape == (2,)
        torch.testing.assert_close(forward.scale_inv, scale.reciprocal())
        saved = layer.save_fp8_meta()
        _step(layer, torch.tensor([10.0, 20.0, 30.0, 40.0], device="hpu"))
        assert not torch.equal(layer.fp8_meta["scaling_fwd"].amax_history, saved["scaling_fwd"]["amax_history"])
        layer.load_fp8_meta(saved)
    after = layer.fp8_meta["scaling_fwd"]
    assert after.scale is scale and after.amax_history is history  # the tensors a captured graph keeps using
    torch.testing.assert_close(after.amax_history, saved["scaling_fwd"]["amax_history"])
    torch.testing.assert_close(after.scale, saved["scaling_fwd"]["scale"])


def test_a_graphed_fp8_layer_with_restored_meta_matches_its_eager_twin(lazy_standin: object) -> None:
    reference, graphed = _layer(), _layer()
    inputs = [torch.tensor(v, device="hpu") for v in ([1, 2, 3, 4], [10, 20, 30, 40], [100, 200, 300, 400])]
    with te.fp8_autocast(enabled=True, fp8_recipe=RECIPE):
        for layer in (reference, graphed):
            _step(layer, torch.tensor([0.1, 0.2, 0.3, 0.4], device="hpu"))
            layer.zero_grad(set_to_none=False)
        meta = graphed.save_fp8_meta()
        cacher = hpu.ModuleCacher(max_graphs=10)
        graphed = cacher(model=graphed, inplace=True, have_grad_accumulation=True, disable_tensor_cache=True)
        graphed(torch.zeros_like(inputs[0]))
        graphed.load_fp8_meta(meta)
        graphed.zero_grad()
        for index, x in enumerate(inputs * 2):
            graphed.set_iteration_count(index)
            assert [t.tolist() for t in _step(graphed, x)] == [t.tolist() for t in _step(reference, x)], index
            for name in ("scaling_fwd", "scaling_bwd"):
                assert torch.equal(graphed.fp8_meta[name].scale, reference.fp8_meta[name].scale), (index, name)


def test_measurement_mode_off_leaves_the_amax_history_alone(standin: object) -> None:
    layer = _layer()
    with te.fp8_autocast(enabled=True, fp8_recipe=RECIPE):
        _step(layer, torch.tensor([1.0, 2.0, 3.0, 4.0], device="hpu"))
        before = layer.fp8_meta["scaling_fwd"].amax_history.clone()
        try:
            FP8GlobalStateManager.set_measurement_mode(True, False)
            assert not FP8GlobalStateManager.is_measurement()
            _step(layer, torch.tensor([50.0, 60.0, 70.0, 80.0], device="hpu"))
            assert torch.equal(layer.fp8_meta["scaling_fwd"].amax_history, before)
        finally:
            FP8GlobalStateManager.set_measurement_mode(False)
        assert FP8GlobalStateManager.is_measurement()
        _step(layer, torch.tensor([50.0, 60.0, 70.0, 80.0], device="hpu"))
        assert layer.fp8_meta["scaling_fwd"].amax_history[0, 0].item() == 80.0


def test_an_integer_input_gives_a_differentiable_output_in_the_weights_dtype(standin: object) -> None:
    layer = _layer()
    with te.fp8_autocast(enabled=True, fp8_recipe=RECIPE):
        out = layer(torch.tensor([1, 2, 3, 4], device="hpu"))
    assert out.dtype == torch.float32 and out.requires_grad
    out.sum().backward()
    assert layer.weight.grad is not None
