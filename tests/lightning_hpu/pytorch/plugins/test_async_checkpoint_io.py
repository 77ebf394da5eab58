"""``HPUAsyncCheckpointIO``: host copies at the save point, background writes, errors surfaced, kills survived."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import torch
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.plugins.io import AsyncCheckpointIO

from lightning_hpu import HPUAsyncCheckpointIO, HPUCheckpointIO
from lightning_hpu.checkpoint.files import remove_orphaned_temporary_files
from tests.helpers.models import RegressionModel
from tests.helpers.paths import ROOT, SCENARIOS
from tests.helpers.trainer import quiet_trainer


class _SlowIO(HPUCheckpointIO):
    """Writes after a gate opens, so a test can act while a background write is pending."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    def save_checkpoint(self, checkpoint: dict[str, Any], path: Any, storage_options: Any = None) -> None:
        assert self.gate.wait(10)
        super().save_checkpoint(checkpoint, path, storage_options)


class _FailingIO(HPUCheckpointIO):
    def save_checkpoint(self, checkpoint: dict[str, Any], path: Any, storage_options: Any = None) -> None:
        raise OSError("disk full")


def test_the_save_point_copy_is_written_not_later_updates(tmp_path: Path) -> None:
    slow = _SlowIO()
    io = HPUAsyncCheckpointIO(slow)
    weights = torch.zeros(4)
    io.save_checkpoint({"weights": weights, "nested": [weights]}, tmp_path / "a.ckpt")
    weights.add_(5)  # a later optimizer step, in place
    assert not (tmp_path / "a.ckpt").exists()  # still queued: save_checkpoint returned before writing
    slow.gate.set()
    io.wait()
    saved = torch.load(tmp_path / "a.ckpt", weights_only=True)
    assert saved["weights"].tolist() == [0.0] * 4 and saved["nested"][0].tolist() == [0.0] * 4
    io.teardown()


def test_host_buffers_are_reused_only_once_their_write_is_done(tmp_path: Path) -> None:
    slow = _SlowIO()
    io = HPUAsyncCheckpointIO(slow)
    weights = torch.zeros(4)
    io.save_checkpoint({"w": weights}, tmp_path / "a.ckpt")
    first_buffer = io._host_buffers[0]
    weights.fill_(1.0)
    io.save_checkpoint({"w": weights}, tmp_path / "b.ckpt")  # a.ckpt is still being written: a new buffer
    assert io._host_buffers[0] is not first_buffer
    slow.gate.set()
    io.wait()
    weights.fill_(2.0)
    second_buffer = io._host_buffers[0]
    io.save_checkpoint({"w": weights}, tmp_path / "c.ckpt")  # nothing pending: the buffer is copied into
    assert io._host_buffers[0] is second_buffer
    io.wait()
    assert [torch.load(tmp_path / f"{name}.ckpt")["w"][0].item() for name in "abc"] == [0.0, 1.0, 2.0]
    io.teardown()


def test_removal_waits_for_the_newer_checkpoint(tmp_path: Path) -> None:
    slow = _SlowIO()
    io = HPUAsyncCheckpointIO(slow)
    old = tmp_path / "old.ckpt"
    torch.save({"step": 0}, old)
    io.save_checkpoint({"step": 1}, tmp_path / "new.ckpt")
    io.remove_checkpoint(old)
    time.sleep(0.1)
    assert old.exists()  # the new one is not written yet
    slow.gate.set()
    io.wait()
    assert not old.exists() and torch.load(tmp_path / "new.ckpt")["step"] == 1
    io.teardown()


def test_a_background_error_surfaces_at_the_next_save_once(tmp_path: Path) -> None:
    io = HPUAsyncCheckpointIO(_FailingIO())
    io.save_checkpoint({"step": 1}, tmp_path / "a.ckpt")
    for future in io._pending:
        future.result()
    with pytest.raises(OSError, match="disk full"):
        io.save_checkpoint({"step": 2}, tmp_path / "a.ckpt")
    io.checkpoint_io = HPUCheckpointIO()  # ignored: already configured
    io.teardown()  # the error was raised once; the second save was never queued


def test_a_background_error_surfaces_at_the_end_of_fit(standin: Any, tmp_path: Path) -> None:
    trainer = quiet_trainer(
        tmp_path,
        accelerator="hpu",
        max_steps=2,
        plugins=[HPUAsyncCheckpointIO(_FailingIO())],
        callbacks=[ModelCheckpoint(dirpath=tmp_path / "ckpt", every_n_train_steps=2)],
    )
    with pytest.raises(OSError, match="disk full"):
        trainer.fit(RegressionModel())


def test_trainer_checkpoints_hold_the_weights_of_their_step(standin: Any, tmp_path: Path) -> None:
    weights: dict[int, torch.Tensor] = {}

    class Model(RegressionModel):
        def on_train_batch_end(self, *args: Any) -> None:
            weights[self.trainer.global_step] = self.layer.weight.detach().clone()

    trainer = quiet_trainer(
        tmp_path,
        accelerator="hpu",
        max_steps=4,
        plugins=[HPUAsyncCheckpointIO()],
        callbacks=[ModelCheckpoint(dirpath=tmp_path / "ckpt", every_n_train_steps=1, save_top_k=-1)],
    )
    trainer.fit(Model())
    files = sorted((tmp_path / "ckpt").glob("*.ckpt"))
    assert len(files) == 4
    for file in files:
        saved = torch.load(file, weights_only=True)
        torch.testing.assert_close(saved["state_dict"]["layer.weight"], weights[saved["global_step"]].cpu())
    assert not list((tmp_path / "ckpt").glob(".*.tmp"))


def test_lightning_async_checkpoint_io_wraps_hpu_checkpoint_io(standin: Any, tmp_path: Path) -> None:
    trainer = quiet_trainer(tmp_path, accelerator="hpu", max_steps=1, plugins=[AsyncCheckpointIO()])
    assert isinstance(trainer.strategy.checkpoint_io, AsyncCheckpointIO)
    assert isinstance(trainer.strategy.checkpoint_io.checkpoint_io, HPUCheckpointIO)


def test_a_kill_during_a_background_write_keeps_the_previous_checkpoint(tmp_path: Path, python_executable: str) -> None:
    """The writer runs in the preloaded Python and is killed by its own pid (which the scenario writes), as a real
    process is."""
    path = tmp_path / "model.ckpt"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))}
    script = SCENARIOS / "async_save_scenario.py"
    process = subprocess.Popen([python_executable, str(script), str(path)], env=env)
    try:
        deadline = time.monotonic() + 120
        first_done = path.with_name(path.name + ".first-done")
        temporary: list[Path] = []
        while time.monotonic() < deadline and not temporary:
            assert process.poll() is None, "the scenario ended before it was killed"
            if first_done.exists():
                temporary = [p for p in tmp_path.glob(".model.ckpt.*.tmp") if p.stat().st_size > 0]
            time.sleep(0.002)
        assert temporary, "the second background write never started"
        os.kill(int(first_done.read_text()), signal.SIGKILL)  # the writer (a preloaded fork, not its shim)
        process.wait(30)  # the shim ends once its process has
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(30)
    saved = torch.load(path, weights_only=True)
    # The previous checkpoint, whole; or, if the write finished just before the kill, the new one as of its save
    # point (never the value written after it, never a partial file).
    if saved["step"] == 1:
        assert bool(saved["weights"].eq(1.0).all())
    else:
        assert saved["step"] == 2 and bool(saved["weights"].eq(2.0).all())
    assert saved["weights"].numel() == 64 * 2**20
    # The killed writer's temporary file is swept by the next save to the directory (here: the sweep it runs).
    left = list(tmp_path.glob(".model.ckpt.*.tmp"))
    if left:  # killed mid-write: the file at `path` is the previous checkpoint
        assert saved["step"] == 1
    assert set(remove_orphaned_temporary_files(tmp_path)) == set(left)
    assert not list(tmp_path.glob(".model.ckpt.*.tmp"))
