"""Fused optimizers and clipping through the backend: explicit hyperparameters, same results, clear errors."""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest
import torch

from gaudi_standin.optimizers import FusedAdamW, FusedSGD
from lightning_hpu import clip_grad_norm, fused_adamw, fused_sgd
from tests.helpers.standin import counters as standin_counters


def _params() -> list[torch.nn.Parameter]:
    torch.manual_seed(0)
    params = [torch.nn.Parameter(torch.randn(4, 3, device="hpu")), torch.nn.Parameter(torch.randn(3, device="hpu"))]
    for p in params:
        p.grad = torch.randn_like(p)
    return params


def _spy(backend: Any, name: str, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    real = getattr(backend, name)

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(backend, name, spy)
    return calls


def test_fused_adamw_gives_every_hyperparameter_to_the_bridge_formula_optimizer(
    standin: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _spy(standin, "fused_adamw", monkeypatch)
    optimizer = fused_adamw(_params(), lr=0.01)
    # FusedAdamW's defaults, passed explicitly so both backends train alike.
    assert calls == [{"lr": 0.01, "betas": (0.9, 0.999), "eps": 1e-6, "weight_decay": 0.0}]
    assert isinstance(optimizer, FusedAdamW)


def _bridge_adamw_by_hand(
    weight: float, grads: list[float], lr: float, betas: tuple[float, float], eps: float, weight_decay: float
) -> tuple[float, float, float]:
    """The bridge's FusedAdamW in scalars: step size lr*sqrt(bc2)/bc1, eps on the uncorrected root, decay first."""
    beta1, beta2 = betas
    m = v = 0.0
    for t, g in enumerate(grads, start=1):
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        step_size = lr * math.sqrt(1 - beta2**t) / (1 - beta1**t)
        weight = weight * (1 - lr * weight_decay) - step_size * m / (math.sqrt(v) + eps)
    return weight, m, v


def test_fused_adamw_computes_the_bridge_step_and_keeps_its_state(standin: Any) -> None:
    grads = [0.5, -0.2, 0.3]
    hyper = dict(lr=0.1, betas=(0.8, 0.9), eps=0.05, weight_decay=0.2)
    weight = torch.nn.Parameter(torch.tensor([1.0], dtype=torch.float64))
    optimizer = fused_adamw([weight], **hyper)  # type: ignore[arg-type]
    for g in grads:
        weight.grad = torch.tensor([g], dtype=torch.float64)
        optimizer.step()
    expected, m, v = _bridge_adamw_by_hand(1.0, grads, **hyper)  # type: ignore[arg-type]
    assert weight.item() == pytest.approx(expected, rel=1e-12)
    # torch's AdamW puts eps after the bias correction: with this eps it lands elsewhere.
    reference = torch.nn.Parameter(torch.tensor([1.0], dtype=torch.float64))
    torch_adamw = torch.optim.AdamW([reference], **hyper)  # type: ignore[arg-type]
    for g in grads:
        reference.grad = torch.tensor([g], dtype=torch.float64)
        torch_adamw.step()
    assert abs(reference.item() - expected) > 1e-3

    # The bridge's state layout: steps counted per group, per-parameter "step" left at 0, the two moments.
    state = optimizer.state_dict()
    assert state["param_groups"][0]["step"] == len(grads)
    assert state["param_groups"][0]["bias_correction"] is True
    assert set(state["state"][0]) == {"step", "exp_avg", "exp_avg_sq"}
    assert state["state"][0]["step"] == 0
    assert state["state"][0]["exp_avg"].item() == pytest.approx(m)
    assert state["state"][0]["exp_avg_sq"].item() == pytest.approx(v)


def test_fused_adamw_resumes_from_its_state_dict(standin: Any) -> None:
    params, resumed_params = _params(), _params()
    optimizer = FusedAdamW(params, lr=0.05, eps=0.01)
    optimizer.step()
    resumed = FusedAdamW(resumed_params, lr=0.05, eps=0.01)
    for p, q in zip(params, resumed_params, strict=True):
        q.data.copy_(p.data)
    resumed.load_state_dict(copy.deepcopy(optimizer.state_dict()))  # as a checkpoint holds it
    optimizer.step()
    resumed.step()
    for p, q in zip(params, resumed_params, strict=True):
        torch.testing.assert_close(p, q)
    assert resumed.param_groups[0]["step"] == 2


def test_fused_adamw_without_bias_correction_steps_by_lr(standin: Any) -> None:
    weight = torch.nn.Parameter(torch.tensor([1.0], dtype=torch.float64))
    weight.grad = torch.tensor([0.4], dtype=torch.float64)
    FusedAdamW([weight], lr=0.1, betas=(0.5, 0.5), eps=0.0, bias_correction=False).step()
    # m = 0.2, v = 0.08: the update is lr * m / sqrt(v).
    assert weight.item() == pytest.approx(1.0 - 0.1 * 0.2 / math.sqrt(0.08), rel=1e-12)


def test_fused_optimizers_mark_steps_in_lazy_mode(lazy_standin: Any) -> None:
    counters = standin_counters()
    params = _params()
    two_groups = FusedAdamW([{"params": params[:1]}, {"params": params[1:]}])
    counters.reset()
    two_groups.step()
    assert counters.mark_steps == 3  # before each group, and after the step
    sgd = FusedSGD(params, lr=0.1, momentum=0.9)
    assert counters.mark_steps == 4  # at construction
    sgd.step()
    assert counters.mark_steps == 6  # around the group
    counters.reset()
    clip_grad_norm(params, 0.1)
    assert counters.mark_steps == 2  # before and after the clip


def test_fused_sgd_momentum_buffer_starts_from_zeros(standin: Any) -> None:
    weight = torch.nn.Parameter(torch.tensor([1.0], dtype=torch.float64))
    weight.grad = torch.tensor([2.0], dtype=torch.float64)
    optimizer = FusedSGD([weight], lr=0.1, momentum=0.9, dampening=0.5)
    optimizer.step()
    # buffer = 0.9 * 0 + (1 - 0.5) * 2 = 1 (torch's SGD would start the buffer at the gradient, 2).
    assert optimizer.state[weight]["momentum_buffer"].item() == pytest.approx(1.0)
    assert weight.item() == pytest.approx(0.9)


def test_fused_sgd_matches_torch(standin: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _spy(standin, "fused_sgd", monkeypatch)
    params, reference_params = _params(), _params()
    optimizer = fused_sgd(params, lr=0.1, momentum=0.9, nesterov=True)
    assert calls == [{"lr": 0.1, "momentum": 0.9, "weight_decay": 0.0, "dampening": 0.0, "nesterov": True}]
    reference = torch.optim.SGD(reference_params, lr=0.1, momentum=0.9, nesterov=True)
    for _ in range(3):
        optimizer.step()
        reference.step()
    for p, q in zip(params, reference_params, strict=True):
        torch.testing.assert_close(p, q)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda p: fused_adamw(p, eps=0.0), "`eps=0.0` must be positive"),
        (lambda p: fused_adamw(p, lr=-1.0), "`lr=-1.0` must be a non-negative number"),
        (lambda p: fused_adamw(p, betas=(0.9, 1.0)), r"`betas=\(0.9, 1.0\)` must be two numbers in \[0, 1\)"),
        (lambda p: fused_sgd(p, lr=0.1, nesterov=True), "`nesterov=True` needs `momentum` > 0"),
        (lambda p: clip_grad_norm(p, 0.0), "`max_norm=0.0` must be positive"),
    ],
)
def test_bad_hyperparameters_are_refused(standin: Any, call: Any, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call(_params())


def test_clip_grad_norm_bounds_the_norm_with_the_backend_clip(standin: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _spy(standin, "clip_grad_norm", monkeypatch)
    params = _params()
    before = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in params]))
    total = clip_grad_norm(params, 0.5)
    after = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in params]))
    assert len(calls) == 1
    torch.testing.assert_close(total, before)
    assert before > 0.5
    torch.testing.assert_close(after.cpu(), torch.tensor(0.5), rtol=1e-4, atol=1e-4)
