"""The bridge's other fused optimizers on the stand-in: FusedLamb, FusedAdagrad, FusedLars and movingavrg.FusedEMA.

Each step is held to a hand-written reference of the bridge's formula, on ``hpu`` parameters. The emulation modules
are imported directly (not through ``habana_frameworks``), as in test_bridge_kernels.
"""

from __future__ import annotations

import copy
import importlib
import math
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import gaudi_standin.startup.import_hook as hook
from gaudi_standin.bridge.habana_frameworks.torch.hpex import movingavrg, optimizers
from gaudi_standin.bridge.habana_frameworks.torch.hpex.movingavrg import FusedEMA
from gaudi_standin.bridge.habana_frameworks.torch.hpex.optimizers import FusedAdagrad, FusedLamb, FusedLars, FusedSGD
from lightning_hpu.hpu_graphs import HPUGraph, graph
from tests.helpers.standin import counters as standin_counters


def _params(dtype: torch.dtype = torch.float64) -> list[nn.Parameter]:
    torch.manual_seed(0)
    return [
        nn.Parameter(torch.randn(4, 3, dtype=dtype, device="hpu")),
        nn.Parameter(torch.randn(3, dtype=dtype, device="hpu")),
    ]


def _grads(step: int, dtype: torch.dtype = torch.float64) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(100 + step)
    return [
        torch.randn(4, 3, generator=gen, dtype=dtype).to("hpu"),
        torch.randn(3, generator=gen, dtype=dtype).to("hpu"),
    ]


def test_the_bridge_module_names_are_served() -> None:
    for name, module in {
        "habana_frameworks.torch.hpex.optimizers": optimizers,
        "habana_frameworks.torch.hpex.movingavrg": movingavrg,
    }.items():
        assert importlib.import_module(hook.standin_module(name)) is module
    assert {"FusedAdagrad", "FusedAdamW", "FusedLamb", "FusedLars", "FusedSGD"} <= set(optimizers.__all__)
    assert movingavrg.__all__ == ["FusedEMA"]


# --- FusedLamb ----------------------------------------------------------------------------------------------------
def _lamb_by_hand(
    weights: list[torch.Tensor],
    grads_per_step: list[list[torch.Tensor]],
    *,
    lr: float,
    betas: tuple[float, float],
    eps: float,
    weight_decay: float,
    max_grad_norm: float | None,
    use_lamb: bool = False,
) -> tuple[list[torch.Tensor], list[torch.Tensor], list[torch.Tensor]]:
    """LAMB as the bridge's kernel-test references write it, one parameter at a time, on CPU copies."""
    beta1, beta2 = betas
    ws = [w.detach().cpu().clone() for w in weights]
    ms = [torch.zeros_like(w) for w in ws]
    vs = [torch.zeros_like(w) for w in ws]
    for t, grads in enumerate(grads_per_step, start=1):
        gs = [g.cpu() for g in grads]
        divisor = 1.0
        if max_grad_norm is not None:
            total = math.sqrt(sum(float((g * g).sum()) for g in gs))
            divisor = total / max_grad_norm if total > max_grad_norm else 1.0
        for w, m, v, g in zip(ws, ms, vs, gs, strict=True):
            g = g / divisor
            m.mul_(beta1).add_(g, alpha=1 - beta1)
            v.mul_(beta2).add_(g * g, alpha=1 - beta2)
            u = (m / (1 - beta1**t)) / ((v / (1 - beta2**t)).sqrt() + eps)
            if weight_decay != 0:
                u = u + weight_decay * w
            ratio = 1.0
            w_norm, u_norm = float(w.norm()), float(u.norm())
            if (weight_decay != 0 or use_lamb) and w_norm > 0 and u_norm > 0:
                ratio = w_norm / u_norm
            w.sub_(lr * ratio * u)
    return ws, ms, vs


@pytest.mark.parametrize(
    ("weight_decay", "max_grad_norm", "use_lamb"),
    [(0.0, None, False), (0.1, None, False), (0.1, 0.5, False), (0.0, 0.5, True), (0.0, 100.0, False)],
    ids=["no-decay", "decay", "decay-clipped", "no-decay-lamb-clipped", "norm-below-bound"],
)
def test_fused_lamb_step_equals_the_lamb_reference(
    standin: Any, weight_decay: float, max_grad_norm: float | None, use_lamb: bool
) -> None:
    params = _params()
    start = [p.detach().clone() for p in params]
    hyper: dict[str, Any] = dict(lr=0.05, betas=(0.8, 0.9), eps=1e-3, weight_decay=weight_decay)
    optimizer = FusedLamb(params, max_grad_norm=max_grad_norm, use_lamb=use_lamb, **hyper)
    steps = [_grads(t) for t in range(3)]
    for grads in steps:
        for p, g in zip(params, grads, strict=True):
            p.grad = g.clone()
        optimizer.step()
        for p, g in zip(params, grads, strict=True):
            assert torch.equal(p.grad, g)  # the clipping reads the gradients; it does not rescale .grad
    expected, ms, vs = _lamb_by_hand(start, steps, max_grad_norm=max_grad_norm, use_lamb=use_lamb, **hyper)
    for p, w, m, v in zip(params, expected, ms, vs, strict=True):
        assert p.device.type == "hpu"
        torch.testing.assert_close(p.detach().cpu(), w, rtol=1e-12, atol=1e-12)
        state = optimizer.state[p]
        assert state["exp_avg"].device.type == "hpu" and state["exp_avg_sq"].device.type == "hpu"
        assert state["exp_avg"].dtype == p.dtype
        torch.testing.assert_close(state["exp_avg"].cpu(), m, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(state["exp_avg_sq"].cpu(), v, rtol=1e-12, atol=1e-12)
    assert optimizer.param_groups[0]["step"] == 3


def test_fused_lamb_clipping_and_trust_ratio_change_the_step(standin: Any) -> None:
    """The reference with clipping differs from the one without, and so does the trust ratio: the test above bites."""
    start = [p.detach().clone() for p in _params()]
    steps = [[g * 10 for g in _grads(0)]]
    base: dict[str, Any] = dict(lr=0.05, betas=(0.8, 0.9), eps=1e-3)
    clipped, _, _ = _lamb_by_hand(start, steps, weight_decay=0.0, max_grad_norm=0.5, **base)
    unclipped, _, _ = _lamb_by_hand(start, steps, weight_decay=0.0, max_grad_norm=None, **base)
    trusted, _, _ = _lamb_by_hand(start, steps, weight_decay=0.0, max_grad_norm=None, use_lamb=True, **base)
    assert not torch.allclose(clipped[0], unclipped[0])
    assert not torch.allclose(trusted[0], unclipped[0])


def test_fused_lamb_has_the_bridge_signature_and_refusals(standin: Any) -> None:
    params = _params()
    optimizer = FusedLamb(params)
    assert optimizer.defaults == dict(
        lr=1e-3,
        bias_correction=True,
        betas=(0.9, 0.999),
        eps=1e-6,
        weight_decay=0.01,
        grad_averaging=True,
        max_grad_norm=1.0,
    )
    assert (optimizer.adam_w_mode, optimizer.set_grad_none, optimizer.use_lamb, optimizer.fused) == (
        1,
        True,
        False,
        False,
    )
    assert optimizer.device == torch.device("hpu", 0) and optimizer.dtype is None
    with pytest.raises(RuntimeError, match="AMSGrad"):
        FusedLamb(params, amsgrad=True)
    for p in params:
        p.grad = torch.ones_like(p)
    optimizer.zero_grad()
    assert all(p.grad is None for p in params)


def test_fused_lamb_without_bias_correction_or_grad_averaging(standin: Any) -> None:
    (weight,) = [nn.Parameter(torch.tensor([1.0, -2.0], dtype=torch.float64, device="hpu"))]
    optimizer = FusedLamb([weight], lr=0.1, betas=(0.5, 0.75), eps=0.0, weight_decay=0.0, max_grad_norm=None,
                          bias_correction=False, grad_averaging=False)  # fmt: skip
    weight.grad = torch.tensor([0.5, 0.25], dtype=torch.float64, device="hpu")
    optimizer.step()
    # m = g (no 1 - beta1), v = 0.25 g**2 (no bias correction): u = g / (0.5 |g|) = 2 sign(g).
    torch.testing.assert_close(weight.detach().cpu(), torch.tensor([1.0 - 0.2, -2.0 - 0.2], dtype=torch.float64))


def _tiny_regression() -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1)).to("hpu")
    x = torch.randn(32, 4).to("hpu")
    y = (x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]]).to("hpu")).tanh()
    return model, x, y


@pytest.mark.parametrize("make", ["lamb", "adagrad", "lars"])
def test_a_tiny_model_trained_with_each_optimizer_lowers_its_loss(standin: Any, make: str) -> None:
    model, x, y = _tiny_regression()
    params = list(model.parameters())
    if make == "lamb":
        optimizer: Any = FusedLamb(params, lr=0.02)
    elif make == "adagrad":
        optimizer = FusedAdagrad(params, lr=0.05)
    else:
        optimizer = FusedLars(FusedSGD(params, lr=1.0, momentum=0.9, weight_decay=1e-4), [1, 0, 1, 0], eeta=0.02)
    losses = []
    for _ in range(60):
        optimizer.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]
    assert all(p.device.type == "hpu" for p in model.parameters())


# --- FusedAdagrad -------------------------------------------------------------------------------------------------
def test_fused_adagrad_step_equals_torch_adagrad_and_keeps_the_bridge_state(standin: Any) -> None:
    hyper: dict[str, Any] = dict(lr=0.1, lr_decay=0.05, weight_decay=0.2, initial_accumulator_value=0.3, eps=1e-3)
    params = _params(torch.float32)
    reference = [nn.Parameter(p.detach().cpu().clone()) for p in params]
    optimizer = FusedAdagrad(params, **hyper)
    torch_adagrad = torch.optim.Adagrad(reference, **hyper)
    for t in range(4):
        grads = _grads(t, torch.float32)
        for p, r, g in zip(params, reference, grads, strict=True):
            p.grad, r.grad = g.clone(), g.cpu().clone()
        optimizer.step()
        torch_adagrad.step()
    for p, r in zip(params, reference, strict=True):
        torch.testing.assert_close(p.detach().cpu(), r.detach(), rtol=1e-6, atol=1e-6)
        assert optimizer.state[p]["sum"].device.type == "hpu"
        torch.testing.assert_close(optimizer.state[p]["sum"].cpu(), torch_adagrad.state[r]["sum"])
    group = optimizer.param_groups[0]
    assert group["step_t"].device.type == "hpu" and group["step_t"].dtype == torch.int32
    assert group["step_t"].tolist() == [4]
    assert group["lr_t"].device.type == "hpu" and group["lr_t"].tolist() == [pytest.approx(0.1)]


def test_fused_adagrad_reads_the_constructors_lr_as_the_bridge_does(standin: Any) -> None:
    (weight,) = [nn.Parameter(torch.tensor([1.0], device="hpu"))]
    optimizer = FusedAdagrad([weight], lr=0.5)
    optimizer.param_groups[0]["lr"] = 100.0  # the bridge's kernel takes group["lr_t"], made at construction
    weight.grad = torch.tensor([2.0], device="hpu")
    optimizer.step()
    # sum = 4, w = 1 - 0.5 * 2 / (2 + 1e-10)
    torch.testing.assert_close(weight.detach().cpu(), torch.tensor([0.5]))
    with pytest.raises(ValueError, match="lr_decay"):
        FusedAdagrad([weight], lr_decay=-1.0)


# --- FusedLars ----------------------------------------------------------------------------------------------------
def test_fused_lars_scales_the_gradients_then_steps_the_wrapped_optimizer(standin: Any) -> None:
    lr, wd, eeta, eps = 0.1, 0.01, 0.002, 1e-8
    params = _params()
    start = [p.detach().cpu().clone() for p in params]
    grads = _grads(0)
    sgd = FusedSGD(params, lr=lr, weight_decay=wd)
    optimizer = FusedLars(sgd, skip_mask=[1, 0], eeta=eeta, eps=eps)
    assert optimizer.param_groups[0] is sgd.param_groups[0] and optimizer.state is sgd.state
    for p, g in zip(params, grads, strict=True):
        p.grad = g.clone()
    optimizer.step()

    # By hand: the first parameter takes part in LARS, the second is only scaled by lr; then SGD (decay off).
    w0, g0 = start[0], grads[0].cpu()
    ratio = eeta * w0.norm() / (g0.norm() + wd * w0.norm() + eps)
    scaled0 = (g0 + wd * w0) * lr * ratio
    scaled1 = grads[1].cpu() * lr
    torch.testing.assert_close(params[0].grad.cpu(), scaled0, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(params[1].grad.cpu(), scaled1, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(params[0].detach().cpu(), w0 - lr * scaled0, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(params[1].detach().cpu(), start[1] - lr * scaled1, rtol=1e-12, atol=1e-12)
    assert sgd.param_groups[0]["weight_decay"] == wd  # given back after the step
    assert optimizer.defaults["eeta"] == eeta and optimizer.defaults["skip_mask"] == [1, 0]


# --- FusedEMA -----------------------------------------------------------------------------------------------------
def test_fused_ema_update_equals_the_hand_written_ema(standin: Any) -> None:
    torch.manual_seed(2)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)).to("hpu")
    ema = FusedEMA(model, decay=0.9)
    assert ema.ema is not model and not ema.ema.training
    averaged = {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
    for update in range(1, 4):
        with torch.no_grad():
            for p in model.parameters():
                p.add_(torch.randn_like(p))
        model(torch.randn(5, 3).to("hpu"))  # moves the BatchNorm's running statistics and counter
        ema.update(model)
        d = 0.9 * (1 - math.exp(-update / 2000))
        for key, value in model.state_dict().items():
            if value.dtype.is_floating_point:
                averaged[key] = d * averaged[key] + (1 - d) * value.detach().cpu()
    assert ema.updates == 3
    for key, value in ema.ema.state_dict().items():
        assert value.device.type == "hpu"
        torch.testing.assert_close(value.cpu(), averaged[key], rtol=1e-5, atol=1e-6)
    assert int(ema.ema.state_dict()["1.num_batches_tracked"]) == 0  # integer buffers are not averaged
    assert ema.updated_ema[0] is not None and ema.updated_ema[0].data_ptr() == ema.ema[0].weight.data_ptr()


def test_fused_ema_refuses_a_negative_decay_and_copies_attributes(standin: Any) -> None:
    model = nn.Linear(2, 2).to("hpu")
    with pytest.raises(ValueError, match="decay"):
        FusedEMA(model, decay=-0.1)
    ema = FusedEMA(model)
    model.names = ["a", "b"]  # type: ignore[assignment]
    ema.update_attr(model)
    assert ema.ema.names == ["a", "b"]


# --- capture ------------------------------------------------------------------------------------------------------
def _net() -> nn.Module:
    torch.manual_seed(3)
    return nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 3)).to("hpu")


def test_a_captured_fused_lamb_step_with_ema_replays_like_eager_steps(lazy_standin: Any) -> None:
    """Warm up eagerly, capture forward+backward+FusedLamb step+EMA update once, replay: equal to eager.

    Bias corrections and the EMA's decay are host values frozen into the graph (as on a Gaudi), so the eager run
    uses the captured step's values for the replayed steps.
    """
    gen = torch.Generator().manual_seed(5)
    batches = [(torch.randn(5, 6, generator=gen), torch.randint(0, 3, (5,), generator=gen)) for _ in range(5)]
    batches = [(x.to("hpu"), y.to("hpu")) for x, y in batches]
    runs = []
    for graphed in (False, True):
        model = _net()
        optimizer = FusedLamb(model.parameters(), lr=0.02, weight_decay=0.01, max_grad_norm=0.5)
        ema = FusedEMA(model, decay=0.99)
        losses = []

        def step(
            x: torch.Tensor, y: torch.Tensor, model: nn.Module = model, opt: Any = optimizer, ema: Any = ema
        ) -> Any:
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            ema.update(model)
            return loss

        optimizer.zero_grad(set_to_none=False)
        losses.append(step(*batches[0]).item())
        if graphed:
            static_x, static_y = batches[1][0].clone(), batches[1][1].clone()
            g = HPUGraph()
            optimizer.zero_grad(set_to_none=False)
            with graph(g):
                static_loss = step(static_x, static_y)
            losses.append(static_loss.item())
            for x, y in batches[2:]:
                optimizer.zero_grad(set_to_none=False)
                static_x.copy_(x)
                static_y.copy_(y)
                g.replay()
                losses.append(static_loss.item())
            assert standin_counters().graph_replays == 3
            assert optimizer.param_groups[0]["step"] == 2 and ema.updates == 2
        else:
            for i, (x, y) in enumerate(batches[1:]):
                if i > 0:
                    optimizer.param_groups[0]["step"] = 1  # the captured (second) step's bias corrections
                    ema.updates = 1  # ... and EMA decay
                optimizer.zero_grad(set_to_none=False)
                losses.append(step(x, y).item())
        runs.append((losses, copy.deepcopy(model.state_dict()), copy.deepcopy(ema.ema.state_dict())))
    (eager_losses, eager_model, eager_ema), (graph_losses, graph_model, graph_ema) = runs
    torch.testing.assert_close(graph_losses, eager_losses)
    for key in eager_model:
        torch.testing.assert_close(graph_model[key], eager_model[key])
        torch.testing.assert_close(graph_ema[key], eager_ema[key])
    assert graph_losses[-1] != graph_losses[1]  # the replays trained


def test_a_captured_fused_adagrad_and_lars_step_replays_like_eager_steps(lazy_standin: Any) -> None:
    """Adagrad counts its steps on the device (lr decay advances per replay); Lars's trust ratios are device ops."""
    gen = torch.Generator().manual_seed(6)
    batches = [(torch.randn(5, 6, generator=gen), torch.randint(0, 3, (5,), generator=gen)) for _ in range(4)]
    batches = [(x.to("hpu"), y.to("hpu")) for x, y in batches]
    makers = {
        "adagrad": lambda p: FusedAdagrad(p, lr=0.05, lr_decay=0.1, weight_decay=0.01),
        "lars": lambda p: FusedLars(FusedSGD(p, lr=1.0, momentum=0.9, weight_decay=1e-3), [1, 0, 1, 0], eeta=0.05),
    }
    for make in makers.values():
        finals = []
        for graphed in (False, True):
            model = _net()
            optimizer = make(list(model.parameters()))

            def step(x: torch.Tensor, y: torch.Tensor, model: nn.Module = model, opt: Any = optimizer) -> Any:
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                opt.step()
                return loss

            optimizer.zero_grad(set_to_none=False)
            step(*batches[0])
            if graphed:
                static_x, static_y = batches[1][0].clone(), batches[1][1].clone()
                g = HPUGraph()
                optimizer.zero_grad(set_to_none=False)
                with graph(g):
                    step(static_x, static_y)
                for x, y in batches[2:]:
                    optimizer.zero_grad(set_to_none=False)
                    static_x.copy_(x)
                    static_y.copy_(y)
                    g.replay()
            else:
                for x, y in batches[1:]:
                    optimizer.zero_grad(set_to_none=False)
                    step(x, y)
            finals.append(copy.deepcopy(model.state_dict()))
        for key in finals[0]:
            torch.testing.assert_close(finals[1][key], finals[0][key])
