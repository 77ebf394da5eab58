"""SingleHPUStrategy: where mark_step happens, fit/validate/test/predict, checkpoints and resume."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from lightning.pytorch import Callback, LightningModule

from gaudi_standin.emulator import machine as standin_runtime
from lightning_hpu import HPUAccelerator, HPUCheckpointIO, SingleHPUStrategy
from lightning_hpu.runtime.bridge import BridgeBackend
from tests.helpers.models import RegressionModel
from tests.helpers.standin import counters as standin_counters
from tests.helpers.trainer import quiet_trainer


class MarkStepProbe(Callback):
    """Reads the stand-in's mark_step counter at the hooks around backward, optimizer step and evaluation."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.events: list[tuple[str, int]] = []

    def _record(self, name: str) -> None:
        self.events.append((name, standin_counters().mark_steps))

    def on_train_batch_start(self, *args: Any) -> None:
        self._record("batch_start")

    def on_after_backward(self, *args: Any) -> None:
        self._record("after_backward")

    def on_before_optimizer_step(self, *args: Any) -> None:
        self._record("before_optimizer_step")

    def on_train_batch_end(self, *args: Any) -> None:
        self._record("batch_end")

    def on_validation_batch_start(self, *args: Any) -> None:
        self._record("val_start")

    def on_validation_batch_end(self, *args: Any) -> None:
        self._record("val_end")


def _deltas(events: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """Each event with the number of mark_steps since the event before it."""
    return [(name, count - events[i - 1][1]) for i, (name, count) in enumerate(events) if i > 0]


def test_mark_step_after_backward_and_after_optimizer_step(lazy_standin: Any, tmp_path: Any) -> None:
    probe = MarkStepProbe(lazy_standin)
    trainer = quiet_trainer(tmp_path, accelerator=HPUAccelerator(), max_steps=2, limit_val_batches=0, callbacks=[probe])
    trainer.fit(RegressionModel())
    assert _deltas(probe.events) == [
        ("after_backward", 0),
        ("before_optimizer_step", 1),  # the step marked right after backward
        ("batch_end", 1),  # the step marked after the optimizer step
        ("batch_start", 0),
        ("after_backward", 0),
        ("before_optimizer_step", 1),
        ("batch_end", 1),
    ]


def test_gradient_accumulation_marks_every_backward_but_steps_once(lazy_standin: Any, tmp_path: Any) -> None:
    probe = MarkStepProbe(lazy_standin)
    trainer = quiet_trainer(
        tmp_path, accelerator="hpu", max_steps=1, accumulate_grad_batches=2, limit_val_batches=0, callbacks=[probe]
    )
    trainer.fit(RegressionModel())
    names = [name for name, _ in probe.events]
    assert names == ["batch_start", "after_backward", "batch_end", "batch_start", "after_backward",
                     "before_optimizer_step", "batch_end"]  # fmt: skip
    assert [delta for _, delta in _deltas(probe.events)] == [0, 1, 0, 0, 1, 1]


class ManualModel(RegressionModel):
    def __init__(self, backend: Any) -> None:
        super().__init__()
        self.automatic_optimization = False
        self.backend = backend
        self.counts: list[int] = []

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        optimizer = self.optimizers()
        x, y = batch
        loss = torch.nn.functional.mse_loss(self(x), y)
        start = standin_counters().mark_steps
        self.manual_backward(loss)
        self.counts.append(standin_counters().mark_steps - start)
        optimizer.step()  # type: ignore[union-attr]
        optimizer.zero_grad()  # type: ignore[union-attr]
        self.counts.append(standin_counters().mark_steps - start)
        return loss


def test_manual_optimization_marks_backward_and_step(lazy_standin: Any, tmp_path: Any) -> None:
    model = ManualModel(lazy_standin)
    quiet_trainer(tmp_path, accelerator="hpu", max_steps=2, limit_val_batches=0).fit(model)
    assert model.counts == [1, 2, 1, 2]


def test_evaluation_steps_are_wrapped_in_mark_steps(lazy_standin: Any, tmp_path: Any) -> None:
    probe = MarkStepProbe(lazy_standin)
    trainer = quiet_trainer(tmp_path, accelerator="hpu", limit_val_batches=2, callbacks=[probe])
    trainer.validate(RegressionModel())
    assert _deltas(probe.events) == [("val_end", 2), ("val_start", 0), ("val_end", 2)]
    before = standin_counters().mark_steps
    trainer.test(RegressionModel(), verbose=False)
    tested = standin_counters().mark_steps - before
    predictions = trainer.predict(RegressionModel())
    assert predictions is not None and len(predictions) == 8
    assert tested == 2 * 8
    assert standin_counters().mark_steps - before - tested == 2 * 8


def test_pipelining_marks_between_forward_and_backward(lazy_standin: Any, tmp_path: Any) -> None:
    probe = MarkStepProbe(lazy_standin)
    strategy = SingleHPUStrategy(pipeline_forward_backward=True)
    trainer = quiet_trainer(
        tmp_path, accelerator="hpu", strategy=strategy, max_steps=1, limit_val_batches=0, callbacks=[probe]
    )
    trainer.fit(RegressionModel())
    assert _deltas(probe.events) == [("after_backward", 1), ("before_optimizer_step", 1), ("batch_end", 1)]


def test_eager_mode_marks_no_steps(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.setenv("PT_HPU_LAZY_MODE", "0")
    from lightning_hpu.runtime import require_backend
    from tests.helpers.standin import reset_backend

    reset_backend()
    trainer = quiet_trainer(tmp_path, accelerator="hpu", max_steps=3, limit_val_batches=0)
    trainer.fit(RegressionModel())
    backend = require_backend()
    assert isinstance(backend, BridgeBackend)
    assert standin_runtime.current().counters.mark_steps == 0


def _weights(model: LightningModule) -> list[torch.Tensor]:
    return [p.detach().clone() for p in model.parameters()]


def test_checkpoint_resume_gives_identical_weights(tmp_path: Any) -> None:
    straight = RegressionModel()
    run = {"limit_train_batches": 4, "limit_val_batches": 0}
    quiet_trainer(tmp_path / "a", accelerator="hpu", max_epochs=2, **run).fit(straight)

    first = RegressionModel()
    trainer = quiet_trainer(tmp_path / "b", accelerator="hpu", max_epochs=1, **run)
    trainer.fit(first)
    assert isinstance(trainer.strategy.checkpoint_io, HPUCheckpointIO)
    path = tmp_path / "mid.ckpt"
    trainer.save_checkpoint(path)

    # The checkpoint holds plain CPU tensors and loads with torch alone, without lightning-hpu or HPU.
    loaded = torch.load(path, map_location=None, weights_only=True)
    tensors = list(loaded["state_dict"].values())
    assert tensors and all(type(t) is torch.Tensor and t.device.type == "cpu" for t in tensors)

    resumed = RegressionModel()
    quiet_trainer(tmp_path / "c", accelerator="hpu", max_epochs=2, **run).fit(resumed, ckpt_path=str(path))
    for expected, actual in zip(_weights(straight), _weights(resumed), strict=True):
        torch.testing.assert_close(actual, expected, rtol=0, atol=0)
    assert not all(torch.equal(a, b) for a, b in zip(_weights(first), _weights(resumed), strict=True))
