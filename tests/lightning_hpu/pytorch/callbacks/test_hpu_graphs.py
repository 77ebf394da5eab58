"""The Lightning switch: HPUGraphs() gives the same results as an unwrapped run, and refuses where graphs can't work."""

from __future__ import annotations

import pytest
import torch
from lightning.pytorch import Trainer
from torch.utils.data import DataLoader, TensorDataset

from lightning_hpu import HPUAccelerator, HPUGraphs
from lightning_hpu.hpu_graphs import HPUGraphsUnavailableError
from tests.helpers.models import TinyClassifier
from tests.helpers.standin import counters as standin_counters
from tests.helpers.trainer import quiet_trainer


def _loader() -> DataLoader:
    gen = torch.Generator().manual_seed(5)
    x = torch.randn(60, 8, generator=gen)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()
    return DataLoader(TensorDataset(x, y), batch_size=8)  # 7 full batches and one of 4 rows


def _fit(
    callbacks: list, accumulate_grad_batches: int = 1, model: TinyClassifier | None = None
) -> tuple[TinyClassifier, dict[str, torch.Tensor]]:
    model = model if model is not None else TinyClassifier()
    trainer = quiet_trainer(
        accelerator=HPUAccelerator(),
        devices=1,
        max_epochs=2,
        callbacks=callbacks,
        enable_checkpointing=False,
        num_sanity_val_steps=0,
        accumulate_grad_batches=accumulate_grad_batches,
    )
    trainer.fit(model, _loader(), _loader())
    return model, dict(trainer.callback_metrics)


def test_switch_gives_the_same_metrics_as_an_unwrapped_run(lazy_standin) -> None:
    plain, plain_metrics = _fit([])
    standin_counters().reset()
    graphed, graphed_metrics = _fit([HPUGraphs(max_graphs=4)])

    assert set(plain_metrics) == {"val_loss", "val_acc"}
    for name, value in plain_metrics.items():
        torch.testing.assert_close(graphed_metrics[name], value)
    for a, b in zip(plain.parameters(), graphed.parameters(), strict=True):
        torch.testing.assert_close(a, b)
    # Predictions kept across validation steps were not overwritten by later replays.
    for a, b in zip(plain.predictions, graphed.predictions, strict=True):
        torch.testing.assert_close(a, b)
    counters = standin_counters()
    # Two training shapes (8 and 4 rows) and two validation shapes were captured; everything else replayed.
    assert counters.graph_cache_inserts == 4
    assert counters.graph_cache_hits == 2 * 16 - 4
    assert "forward" not in graphed.__dict__  # teardown restored the module


def test_switch_with_gradient_accumulation_matches_unwrapped(lazy_standin) -> None:
    plain, plain_metrics = _fit([], accumulate_grad_batches=2)
    graphed, graphed_metrics = _fit([HPUGraphs(eval=False)], accumulate_grad_batches=2)
    torch.testing.assert_close(graphed_metrics["val_loss"], plain_metrics["val_loss"])
    for a, b in zip(plain.parameters(), graphed.parameters(), strict=True):
        torch.testing.assert_close(a, b)


def test_switch_graphs_named_submodules_only(lazy_standin) -> None:
    _, metrics = _fit([HPUGraphs(modules=["net.0"], eval=False)])
    assert standin_counters().graph_cache_inserts == 2
    assert standin_counters().graph_cache_uncached == 0
    assert metrics["val_loss"] > 0


def test_switch_refusals(lazy_standin, monkeypatch) -> None:
    with pytest.raises(ValueError, match="graphs nothing"):
        HPUGraphs(train=False, eval=False)
    with pytest.raises(TypeError, match="list of submodule names"):
        HPUGraphs(modules="net")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no submodule 'encoder'"):
        _fit([HPUGraphs(modules=["encoder"])])
    with pytest.raises(HPUGraphsUnavailableError, match="HPU accelerator"):
        Trainer(accelerator="cpu", callbacks=[HPUGraphs()], logger=False).fit(TinyClassifier(), _loader())

    hooked = TinyClassifier()
    hooked.net.register_forward_pre_hook(lambda *_: None)
    trainer = Trainer(accelerator=HPUAccelerator(), devices=1, callbacks=[HPUGraphs(modules=["net"])], logger=False)
    with pytest.raises(HPUGraphsUnavailableError, match="hooks"):
        trainer.fit(hooked, _loader())

    from tests.helpers.standin import reset_backend

    monkeypatch.setenv("PT_HPU_LAZY_MODE", "0")
    reset_backend()
    with pytest.raises(HPUGraphsUnavailableError, match="lazy mode"):
        _fit([HPUGraphs()])


class SyncsOnTheHost(TinyClassifier):
    """Reads a value on the host in ``forward`` (``.item()``), which no graph capture allows, until told not to."""

    sync = True

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.net(x)
        if self.sync:
            out.sum().item()
        return out


def test_a_failed_fit_leaves_the_module_eager_and_refittable(lazy_standin) -> None:
    from gaudi_standin.graphs.standin_graph import HostSyncInCaptureError

    model = SyncsOnTheHost()
    trainer = quiet_trainer(
        accelerator=HPUAccelerator(), devices=1, max_epochs=1, callbacks=[HPUGraphs()], enable_checkpointing=False
    )
    with pytest.raises(HostSyncInCaptureError):
        trainer.fit(model, _loader())
    graphing = {"forward", "clear_cache", "clear_inputs", "orig_forward", "set_iteration_count", "graph_cacher"}
    assert graphing.isdisjoint(model.__dict__)  # no graphed forward, caches or helpers left
    captures = standin_counters().graph_captures
    model.train()
    assert model(torch.randn(8, 8)).shape == (8, 3)  # runs eagerly: nothing captured
    assert standin_counters().graph_captures == captures

    model.sync = False
    graphed, metrics = _fit([HPUGraphs(max_graphs=4)], model=model)
    assert metrics["val_loss"] > 0 and standin_counters().graph_cache_inserts > 0
    assert "forward" not in graphed.__dict__


def test_a_module_graphed_by_hand_is_refused_with_a_clear_message(lazy_standin) -> None:
    from lightning_hpu.hpu_graphs import wrap_in_hpu_graph

    model = TinyClassifier()
    wrap_in_hpu_graph(model.net)
    with pytest.raises(HPUGraphsUnavailableError, match=r"`modules\['net'\]` \(Sequential\) is already graphed"):
        _fit([HPUGraphs(modules=["net"])], model=model)
