"""Manual capture and replay on the stand-in: real capture, replay on static buffers, the graph rules."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from gaudi_standin.graphs.standin_graph import HostSyncInCaptureError
from lightning_hpu.hpu_graphs import HPUGraph, HPUGraphsUnavailableError, graph
from tests.helpers.standin import counters as standin_counters


def _net() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 4))


def _batches(n: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    gen = torch.Generator().manual_seed(1)
    return [(torch.randn(6, 8, generator=gen), torch.randint(0, 4, (6,), generator=gen)) for _ in range(n)]


def _eager_train(model: nn.Module, batches: list, momentum: float) -> list[float]:
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=momentum)
    losses = []
    for x, y in batches:
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_captured_training_step_matches_eager(lazy_standin, momentum: float) -> None:
    """The seed's pattern: zero_grad, capture fwd+bwd+step once, then copy each batch in and replay."""
    eager, graphed = _net(), _net()
    batches = _batches(6)
    eager_losses = _eager_train(eager, batches, momentum)

    opt = torch.optim.SGD(graphed.parameters(), lr=0.1, momentum=momentum)
    first = 0
    if momentum:
        # The momentum buffer is created by Python on the first step: run it eagerly before capturing (graph rule).
        x, y = batches[0]
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(graphed(x), y).backward()
        opt.step()
        first = 1
    static_x, static_y = batches[first][0].clone(), batches[first][1].clone()
    g = HPUGraph()
    opt.zero_grad(set_to_none=True)
    with graph(g):
        static_loss = F.cross_entropy(graphed(static_x), static_y)
        static_loss.backward()
        opt.step()
    losses = [static_loss.item()]
    for x, y in batches[first + 1 :]:
        static_x.copy_(x)
        static_y.copy_(y)
        g.replay()
        losses.append(static_loss.item())

    assert losses == pytest.approx(eager_losses[first:], rel=1e-5)
    for (name, a), b in zip(eager.state_dict().items(), graphed.state_dict().values(), strict=True):
        torch.testing.assert_close(a, b, msg=name)
    assert standin_counters().graph_captures == 1
    assert standin_counters().graph_replays == len(batches) - first - 1


def test_replay_after_copying_a_new_batch_gives_its_loss(lazy_standin) -> None:
    model = _net().eval()
    (x0, y0), (x1, y1) = _batches(2)
    static_x, static_y = x0.clone(), y0.clone()
    g = HPUGraph()
    with torch.no_grad(), graph(g):
        static_loss = F.cross_entropy(model(static_x), static_y)
    with torch.no_grad():
        expected0, expected1 = F.cross_entropy(model(x0), y0), F.cross_entropy(model(x1), y1)
    torch.testing.assert_close(static_loss, expected0)
    static_x.copy_(x1)
    static_y.copy_(y1)
    g.replay()
    torch.testing.assert_close(static_loss, expected1)
    assert not torch.allclose(expected0, expected1)


def test_branch_taken_at_capture_is_taken_at_every_replay(lazy_standin) -> None:
    """The graph rule: Python control flow runs once, during the capture."""
    settings = {"double": True}

    def step(x: torch.Tensor) -> torch.Tensor:
        return x * 2 if settings["double"] else x + 100

    static_x = torch.ones(3)
    g = HPUGraph()
    with graph(g):
        out = step(static_x)
    settings["double"] = False  # Python state changed after the capture: the graph does not see it
    static_x.copy_(torch.tensor([5.0, 6.0, 7.0]))
    g.replay()
    torch.testing.assert_close(out, torch.tensor([10.0, 12.0, 14.0]))
    torch.testing.assert_close(step(static_x), torch.tensor([105.0, 106.0, 107.0]))


def test_random_ops_draw_new_numbers_at_each_replay(lazy_standin) -> None:
    static_x = torch.ones(1000)
    g = HPUGraph()
    with graph(g):
        out = F.dropout(static_x, p=0.5, training=True)
    g.replay()  # the capture drew no numbers (its generator state is the graph's): this is the first draw
    first = out.clone()
    g.replay()
    assert not torch.equal(first, out)
    assert set(out.unique().tolist()) <= {0.0, 2.0}


@pytest.mark.parametrize(
    ("body", "what"),
    [
        (lambda t: t.sum().item(), "item"),
        (lambda t: bool(t.sum() > 0), "bool"),
        (lambda t: print(t), "printing"),
        (lambda t: t.tolist(), "tolist"),
        (lambda t: t.cpu(), "cpu"),
        (lambda t: t[t > 0], "boolean-mask"),
        (lambda t: torch.nonzero(t), "nonzero"),
        (lambda t: torch.unique(t), "unique"),
    ],
)
def test_host_sync_during_capture_fails(lazy_standin, body, what: str) -> None:
    static_x = torch.randn(4)
    g = HPUGraph()
    with pytest.raises(HostSyncInCaptureError, match=what), graph(g):
        body(static_x * 2)
    # The failed capture left nothing behind: new work is not recorded and the graph cannot replay.
    with pytest.raises(RuntimeError, match="captured graph"):
        g.replay()
    g2 = HPUGraph()
    with graph(g2):
        y = static_x + 1
    g2.replay()
    torch.testing.assert_close(y, static_x + 1)


def test_one_capture_at_a_time_and_replay_needs_capture(lazy_standin) -> None:
    g1, g2 = HPUGraph(), HPUGraph()
    with pytest.raises(RuntimeError, match="capture it first"):
        g1.replay()
    with graph(g1), pytest.raises(RuntimeError, match="one HPU graph capture"):
        g2.capture_begin()


def test_manual_begin_end_and_reset(lazy_standin) -> None:
    x = torch.zeros(2)
    g = HPUGraph()
    g.capture_begin()
    x.add_(1)
    g.capture_end()
    g.replay()
    g.replay()
    torch.testing.assert_close(x, torch.full((2,), 3.0))
    g.reset()
    with pytest.raises(RuntimeError, match="capture it first"):
        g.replay()


def test_graphs_refused_in_eager_mode(lazy_standin, monkeypatch) -> None:
    from tests.helpers.standin import reset_backend

    monkeypatch.setenv("PT_HPU_LAZY_MODE", "0")
    reset_backend()
    with pytest.raises(HPUGraphsUnavailableError, match="PT_HPU_LAZY_MODE=1"):
        HPUGraph()


def test_graph_needs_an_hpugraph(lazy_standin) -> None:
    with pytest.raises(TypeError, match=r"HPUGraph\(\)"):
        graph(copy.copy(object()))  # type: ignore[arg-type]


def test_capture_active_tells_whether_a_capture_is_underway(lazy_standin) -> None:
    from gaudi_standin.graphs.standin_graph import capture_active

    g = HPUGraph()
    x = torch.ones(2)
    assert not capture_active()
    with graph(g):
        assert capture_active()
        x.mul_(2)
    assert not capture_active()
    with pytest.raises(HostSyncInCaptureError), graph(HPUGraph()):
        x.sum().item()
    assert not capture_active()  # a failed capture ends too


def test_dtype_arithmetic_on_the_host_is_no_host_sync(lazy_standin) -> None:
    """``promote_types``/``result_type`` read dtypes only (autocast code calls them inside captured forwards); a value
    read is still refused, and a refused capture leaves the next one possible."""
    x = torch.ones(4, device="hpu")
    g = HPUGraph()
    with graph(g), torch.autocast("hpu", dtype=torch.bfloat16):
        wide = torch.promote_types(x.dtype, torch.bfloat16)
        out = (x * 2).to(torch.result_type(x, 1.0))
    assert wide == torch.float32 and out.dtype == torch.float32
    x.fill_(3.0)
    g.replay()
    torch.testing.assert_close(out, torch.full((4,), 6.0, device="hpu"))
    with pytest.raises(HostSyncInCaptureError), graph(HPUGraph()):
        x.sum().item()
    with graph(HPUGraph()):
        (x + 1).sum()
