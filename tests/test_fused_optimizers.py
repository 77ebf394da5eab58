"""Fused optimizers and clipping through the backend: explicit hyperparameters, same results, clear errors."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from lightning_hpu import clip_grad_norm, fused_adamw, fused_sgd


def _params() -> list[torch.nn.Parameter]:
    torch.manual_seed(0)
    params = [torch.nn.Parameter(torch.randn(4, 3)), torch.nn.Parameter(torch.randn(3))]
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


def test_fused_adamw_gives_every_hyperparameter_and_matches_torch(
    standin: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _spy(standin, "fused_adamw", monkeypatch)
    params = _params()
    optimizer = fused_adamw(params, lr=0.01)
    # FusedAdamW's defaults, passed explicitly so both backends train alike.
    assert calls == [{"lr": 0.01, "betas": (0.9, 0.999), "eps": 1e-6, "weight_decay": 0.0}]
    assert isinstance(optimizer, torch.optim.AdamW) and optimizer.defaults["fused"] is True

    reference_params = _params()
    reference = torch.optim.AdamW(reference_params, lr=0.01, eps=1e-6, weight_decay=0.0)
    for _ in range(3):
        optimizer.step()
        reference.step()
    for p, q in zip(params, reference_params, strict=True):
        torch.testing.assert_close(p, q)


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
    torch.testing.assert_close(after, torch.tensor(0.5), rtol=1e-4, atol=1e-4)
