"""``FusedAdamW(moments_dtype=(torch.float8_e4m3fn, torch.float8_e5m2))`` trains on the stand-in, as on a Gaudi 2/3.

The moments are kept in fp8 with a power-of-two scale per tensor (the bridge's ``exp_avg_scale``/``exp_avg_sq_scale``
state), updated in the parameter's dtype and used unrounded for the step; each step is held to a hand-written
reference of that algorithm, and to torch's AdamW within the bridge's own test tolerance. An emulated GAUDI (no fp8)
refuses them.
"""

from __future__ import annotations

import math

import pytest
import torch

from gaudi_standin.bridge.habana_frameworks.torch.hpex.optimizers import FusedAdamW
from gaudi_standin.bridge.habana_frameworks.torch.hpex.optimizers.distributed import (
    FusedAdamW as DistributedFusedAdamW,
)
from gaudi_standin.emulator import machine

FP8 = (torch.float8_e4m3fn, torch.float8_e5m2)
FP8_MAX = {torch.float8_e4m3fn: 240.0, torch.float8_e5m2: 57344.0}
LR, BETAS, EPS, WD = 0.1, (0.9, 0.99), 1e-6, 0.1


def _quantize(value: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """The reference: scale = 2 ** floor(log2(max / amax)), stored = round_to_nearest(value * scale)."""
    scale = torch.tensor([2.0 ** math.floor(math.log2(FP8_MAX[dtype] / value.abs().max().item()))])
    return (value * scale).to(dtype), scale


def _reference(weights: list[torch.Tensor], grads: list[list[torch.Tensor]]) -> list[torch.Tensor]:
    weights = [w.clone() for w in weights]
    moments = [[torch.zeros(w.shape, dtype=FP8[0]), torch.zeros(w.shape, dtype=FP8[1])] for w in weights]
    scales = [[torch.ones(1), torch.ones(1)] for _ in weights]
    for step, step_grads in enumerate(grads, start=1):
        step_size = LR * math.sqrt(1 - BETAS[1] ** step) / (1 - BETAS[0] ** step)
        for w, g, (m8, v8), (ms, vs) in zip(weights, step_grads, moments, scales, strict=True):
            m = m8.float() / ms * BETAS[0] + g * (1 - BETAS[0])
            v = v8.float() / vs * BETAS[1] + g * g * (1 - BETAS[1])
            m8.copy_(_quantize(m, FP8[0])[0]), ms.copy_(_quantize(m, FP8[0])[1])
            v8.copy_(_quantize(v, FP8[1])[0]), vs.copy_(_quantize(v, FP8[1])[1])
            w.mul_(1 - WD * LR).add_(m / (v.sqrt() + EPS) * -step_size)
    return weights


def _problem() -> tuple[list[torch.Tensor], list[list[torch.Tensor]]]:
    gen = torch.Generator().manual_seed(3)
    weights = [torch.randn(3, 4, generator=gen), torch.randn(5, generator=gen)]
    grads = [[torch.randn(w.shape, generator=gen) for w in weights] for _ in range(3)]
    return weights, grads


def test_fp8_moments_follow_the_bridges_kernel_step_by_step(standin: object) -> None:
    weights, grads = _problem()
    params = [torch.nn.Parameter(w.to("hpu")) for w in weights]
    optimizer = FusedAdamW(params, lr=LR, betas=BETAS, eps=EPS, weight_decay=WD, moments_dtype=FP8)
    for step_grads in grads:
        for param, grad in zip(params, step_grads, strict=True):
            param.grad = grad.to("hpu")
        optimizer.step()
    for param, expected in zip(params, _reference(weights, grads), strict=True):
        torch.testing.assert_close(param.detach().cpu(), expected, rtol=1e-6, atol=1e-6)
        state = optimizer.state[param]
        assert (state["exp_avg"].dtype, state["exp_avg_sq"].dtype) == FP8
        for name, dtype in (("exp_avg", FP8[0]), ("exp_avg_sq", FP8[1])):
            scale = state[f"{name}_scale"]
            assert scale.dtype == param.dtype and scale.device == param.device and scale.shape == (1,)
            assert torch.log2(scale).frac().eq(0).all()  # a power of two
            assert (state[name].float().abs().max() <= FP8_MAX[dtype]).item()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_fp8_moments_stay_within_the_bridges_tolerance_of_adamw(standin: object, dtype: torch.dtype) -> None:
    weights, grads = _problem()
    host = [w.to(dtype).requires_grad_() for w in weights]
    device = [torch.nn.Parameter(w.to(dtype).to("hpu")) for w in weights]
    reference = torch.optim.AdamW(host, lr=LR, betas=BETAS, eps=EPS, weight_decay=WD, foreach=False)
    fused = FusedAdamW(device, lr=LR, betas=BETAS, eps=EPS, weight_decay=WD, moments_dtype=FP8)
    distributed = [torch.nn.Parameter(w.to(dtype).to("hpu")) for w in weights]
    functional = DistributedFusedAdamW(distributed, lr=LR, betas=BETAS, eps=EPS, weight_decay=WD, moments_dtype=FP8)
    for step_grads in grads:
        for h, d, g in zip(host, device, step_grads, strict=True):
            h.grad, d.grad = g.to(dtype), g.to(dtype).to("hpu")
        reference.step()
        fused.step()
        functional.step([g.to(dtype).to("hpu") for g in step_grads])
    for h, d, f in zip(host, device, distributed, strict=True):
        torch.testing.assert_close(d.detach().cpu(), h.detach(), rtol=5e-2, atol=1e-1)
        torch.testing.assert_close(f.detach().cpu(), h.detach(), rtol=5e-2, atol=1e-1)


def test_a_model_trains_with_fp8_moments(standin: object) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)).to("hpu")
    optimizer = FusedAdamW(model.parameters(), lr=1e-2, moments_dtype=FP8)
    x, y = torch.randn(64, 8, device="hpu"), torch.randn(64, 1, device="hpu")
    losses = []
    for _ in range(30):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.7 * losses[0]


def test_an_emulated_gaudi_without_fp8_refuses_fp8_moments(standin: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIGHTNING_HPU_CPU_DEVICE_NAME", "GAUDI")
    machine.reset()
    param = torch.nn.Parameter(torch.ones(2, device="hpu"))
    with pytest.raises(RuntimeError, match="fp8 needs a Gaudi2 or later"):
        FusedAdamW([param], moments_dtype=FP8)
    FusedAdamW([param], moments_dtype=torch.bfloat16)  # other moments are fine there
