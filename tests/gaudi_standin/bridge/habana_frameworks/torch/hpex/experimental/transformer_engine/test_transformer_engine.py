"""fp8 computes on the stand-in: the emulated Transformer Engine quantizes to torch's fp8 dtypes with delayed scaling.

The expected values are built from torch's own fp8 casts (``Tensor.to(torch.float8_e4m3fn)``), not from the engine.
"""

from __future__ import annotations

import statistics
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from lightning.pytorch import LightningModule
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from gaudi_standin.bridge.habana_frameworks.torch.hpex.experimental import transformer_engine as te
from lightning_hpu import HPUDeepSpeedPrecisionPlugin, HPUPrecisionPlugin
from lightning_hpu.runtime import settings
from tests.helpers.trainer import quiet_trainer

E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2


def _fp8(t: torch.Tensor, dtype: torch.dtype, scale: float = 1.0) -> torch.Tensor:
    """What ``t`` becomes when cast to ``dtype`` with ``scale`` (torch's rounding), back in fp32."""
    return (t * scale).to(dtype).float() / scale


def _layer(inp: int = 16, out: int = 8) -> te.Linear:
    torch.manual_seed(0)
    return te.Linear(inp, out, device="cpu")


def _recipe(**kwargs: Any) -> te.recipe.DelayedScaling:
    return te.recipe.DelayedScaling(**kwargs)


def test_outside_fp8_autocast_the_layer_is_a_plain_linear(standin: Any) -> None:
    layer = _layer()
    x = torch.randn(4, 16)
    assert torch.equal(layer(x), F.linear(x, layer.weight, layer.bias))
    with te.fp8_autocast(enabled=False):
        assert torch.equal(layer(x), F.linear(x, layer.weight, layer.bias))


@pytest.mark.parametrize(
    ("fmt", "forward_dtype", "backward_dtype"),
    [("HYBRID", E4M3, E5M2), ("E4M3", E4M3, E4M3), ("E5M2", E5M2, E5M2)],
)
def test_first_step_quantizes_inputs_weights_and_gradients_to_the_formats(
    standin: Any, fmt: str, forward_dtype: torch.dtype, backward_dtype: torch.dtype
) -> None:
    """The first step runs at scale 1: its output and gradients are fp32 matmuls of torch's fp8 casts."""
    layer = _layer()
    x = torch.randn(5, 16, requires_grad=True)
    grad = torch.randn(5, 8)
    with te.fp8_autocast(enabled=True, fp8_recipe=_recipe(fp8_format=te.recipe.Format[fmt])):
        out = layer(x)
    out.backward(grad)

    xq, wq, gq = _fp8(x.detach(), forward_dtype), _fp8(layer.weight.detach(), forward_dtype), _fp8(grad, backward_dtype)
    torch.testing.assert_close(out, F.linear(xq, wq, layer.bias), rtol=0, atol=1e-5)
    assert not torch.allclose(out, F.linear(x, layer.weight, layer.bias), rtol=0, atol=1e-5)  # it did quantize
    torch.testing.assert_close(x.grad, gq @ wq, rtol=0, atol=1e-5)
    torch.testing.assert_close(layer.weight.grad, gq.t() @ xq, rtol=0, atol=1e-5)
    torch.testing.assert_close(layer.bias.grad, grad.sum(0))


def test_delayed_scaling_uses_the_last_steps_amax_with_the_margin(standin: Any) -> None:
    layer = _layer()
    recipe = _recipe(fp8_format=te.recipe.Format.HYBRID, margin=1)
    first, second = torch.randn(4, 16) * 0.01, torch.randn(4, 16) * 0.01
    with te.fp8_autocast(enabled=True, fp8_recipe=recipe):
        layer(first)
        out = layer(second)
    # The second step's input scale comes from the first step's amax: 2 ** (floor(log2(240 / amax)) - margin).
    amax = first.abs().amax().item()
    scale = 2.0 ** (int(torch.floor(torch.log2(torch.tensor(240.0 / amax)))) - 1)
    w_amax = layer.weight.abs().amax().item()
    w_scale = 2.0 ** (int(torch.floor(torch.log2(torch.tensor(240.0 / w_amax)))) - 1)
    expected = F.linear(_fp8(second, E4M3, scale), _fp8(layer.weight.detach(), E4M3, w_scale), layer.bias)
    torch.testing.assert_close(out, expected, rtol=0, atol=1e-6)
    # Small inputs at scale 1 would lose most of their bits; the delayed scale keeps them to fp8 precision.
    exact = F.linear(second, layer.weight, layer.bias)
    assert (out - exact).abs().max() < (F.linear(_fp8(second, E4M3), layer.weight, layer.bias) - exact).abs().max()


def test_interval_and_amax_history(standin: Any) -> None:
    layer = _layer()
    big, small = torch.full((2, 16), 8.0), torch.full((2, 16), 0.5)
    recipe = _recipe(interval=2, amax_history_len=3, amax_compute_algo="max", fp8_format=te.recipe.Format.E4M3)
    scales = []
    with te.fp8_autocast(enabled=True, fp8_recipe=recipe):
        for x in (big, small, small, small, small):
            layer(x)
            scales.append(layer._fp8_scaling[True].scale[0].item())
    # Recomputed before steps 3 and 5 only (interval 2), from the largest amax of the last 3 steps.
    assert scales == [1.0, 1.0, 16.0, 16.0, 256.0]


def test_bad_recipes_and_a_first_generation_gaudi_are_refused(standin: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="`interval=0` must be an integer >= 1"):
        _recipe(interval=0)
    with pytest.raises(ValueError, match="fp8_format='E4M3'"):
        _recipe(fp8_format="E4M3")
    with pytest.raises(ValueError, match="tensor parallelism"):
        te.Linear(4, 4, tp_size=2)
    monkeypatch.setenv(settings.CPU_DEVICE_NAME_ENV, "GAUDI")
    from tests.helpers.standin import reset_backend

    reset_backend()
    assert te.fp8.is_fp8_available() == (False, "FP8 not supported on Gaudi, Gaudi2 or higher required")
    with pytest.raises(RuntimeError, match="Gaudi2 or higher required"), te.fp8_autocast(enabled=True):
        pass
    with pytest.raises(ValueError, match=r"^fp8 precision needs Gaudi2 or later, but this device is GAUDI;"):
        HPUPrecisionPlugin("fp8")


def test_the_layer_is_captured_and_replayed_in_an_hpu_graph(lazy_standin: Any) -> None:
    from lightning_hpu.hpu_graphs import HPUGraph, graph

    layer = _layer()
    static_x = torch.randn(4, 16)
    with te.fp8_autocast(enabled=True, fp8_recipe=_recipe()):
        layer(static_x)  # warm-up: the scaling state exists
        g = HPUGraph()
        with graph(g):
            static_out = layer(static_x)
    new_x = torch.randn(4, 16)
    static_x.copy_(new_x)
    g.replay()
    assert not torch.equal(static_out, F.linear(new_x, layer.weight, layer.bias))  # in fp8 ...
    torch.testing.assert_close(static_out, F.linear(new_x, layer.weight, layer.bias), rtol=0.1, atol=0.05)  # ... close


# --- the package's fp8 training paths, on the emulated engine -----------------------------------------------------
class _Classifier(LightningModule):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 64), nn.GELU(), nn.Linear(64, 4))
        self.losses: list[float] = []

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        loss = F.cross_entropy(self.net(x).float(), y)
        self.losses.append(loss.item())
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(self.parameters(), lr=3e-3)


def _data() -> DataLoader:
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(256, 16, generator=generator)
    y = (x @ torch.randn(16, 4, generator=generator)).argmax(1)
    return DataLoader(TensorDataset(x, y), batch_size=32)


def _fit(plugin: Any, **kwargs: Any) -> _Classifier:
    model = _Classifier()
    quiet_trainer(
        accelerator="hpu", devices=1, plugins=[plugin], max_epochs=6, enable_checkpointing=False, **kwargs
    ).fit(model, _data())
    return model


def test_trainer_fp8_trains_within_tolerance_of_bf16(standin: Any) -> None:
    """Measured on this model: the last 8 steps' mean loss of fp8 is within 3% of bf16's, each step within 10%."""
    bf16 = _fit(HPUPrecisionPlugin("bf16-mixed")).losses
    fp8_model = _fit(HPUPrecisionPlugin("fp8", fp8_recipe={"fp8_format": "HYBRID"}))
    fp8 = fp8_model.losses
    assert all(isinstance(layer, te.Linear) for layer in (fp8_model.net[0], fp8_model.net[2], fp8_model.net[4]))
    assert fp8_model.net[0]._fp8_scaling[False].steps == len(fp8)  # every step's backward ran in fp8
    assert statistics.mean(fp8[-8:]) < 0.3 * statistics.mean(fp8[:8])  # the loss falls
    assert statistics.mean(fp8[-8:]) == pytest.approx(statistics.mean(bf16[-8:]), rel=0.05)
    assert max(abs(a - b) / a for a, b in zip(bf16, fp8, strict=True)) < 0.15
    assert fp8 != bf16  # fp8 computed differently


def test_deepspeed_fp8_trains_on_the_emulated_engine(standin: Any) -> None:
    from lightning_hpu import HPUDeepSpeedStrategy

    model = _fit(HPUDeepSpeedPrecisionPlugin("fp8"), strategy=HPUDeepSpeedStrategy(stage=2))
    assert isinstance(model.net[0], te.Linear) and model.net[0].weight.dtype == torch.bfloat16
    assert model.net[0]._fp8_scaling[True].steps == len(model.losses)
    assert statistics.mean(model.losses[-8:]) < 0.3 * statistics.mean(model.losses[:8])
