"""HPUCheckpointIO: host copies of device tensors, atomic writes, CPU loading."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any, ClassVar

import pytest
import torch

from lightning_hpu import HPUCheckpointIO
from lightning_hpu.checkpoint.files import process_start_time, remove_orphaned_temporary_files, this_host
from tests.helpers.processes import alive
from tests.helpers.trainer import quiet_trainer


class FakeHPUTensor(torch.Tensor):
    """A tensor that says it lives on an HPU; copying it to the CPU gives a plain CPU tensor, as on a Gaudi."""

    host_copies: ClassVar[int] = 0

    @property  # type: ignore[misc]
    def device(self) -> torch.device:  # type: ignore[override]
        return torch.device("hpu")

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        with torch._C.DisableTorchFunctionSubclass():
            result = func(*args, **kwargs)
        if func in (torch.Tensor.to, torch.Tensor.cpu) and isinstance(result, torch.Tensor):
            cls.host_copies += 1
            return result.as_subclass(torch.Tensor).clone()
        return result


def _device_tensor(values: list[float]) -> torch.Tensor:
    return torch.tensor(values).as_subclass(FakeHPUTensor)


def test_device_tensors_are_saved_as_plain_cpu_tensors(tmp_path: Path) -> None:
    checkpoint = {"state_dict": {"w": _device_tensor([1.0, 2.0])}, "optimizer_states": [{"m": _device_tensor([3.0])}]}
    path = tmp_path / "model.ckpt"
    HPUCheckpointIO().save_checkpoint(checkpoint, path)
    loaded = torch.load(path, weights_only=True)  # loads without HPU and without lightning-hpu
    for tensor in (loaded["state_dict"]["w"], loaded["optimizer_states"][0]["m"]):
        assert type(tensor) is torch.Tensor
        assert tensor.device.type == "cpu"
    torch.testing.assert_close(loaded["state_dict"]["w"], torch.tensor([1.0, 2.0]))


def test_a_crash_mid_save_keeps_the_previous_checkpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    io = HPUCheckpointIO()
    path = tmp_path / "last.ckpt"
    io.save_checkpoint({"step": 1, "w": torch.ones(3)}, path)

    def crash_halfway(obj: Any, file: Any, *args: Any, **kwargs: Any) -> None:
        file.write(b"partial checkpoint bytes")
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", crash_halfway)
    with pytest.raises(OSError, match="disk full"):
        io.save_checkpoint({"step": 2, "w": torch.zeros(3)}, path)
    monkeypatch.undo()

    assert io.load_checkpoint(path)["step"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["last.ckpt"]  # no temporary file left behind


def test_load_maps_to_cpu_and_reports_missing_files(tmp_path: Path) -> None:
    io = HPUCheckpointIO()
    path = tmp_path / "nested" / "dir" / "x.ckpt"
    io.save_checkpoint({"w": torch.arange(3.0)}, path)
    assert io.load_checkpoint(path)["w"].device.type == "cpu"
    with pytest.raises(FileNotFoundError):
        io.load_checkpoint(tmp_path / "missing.ckpt")
    with pytest.raises(TypeError, match="storage_options"):
        io.save_checkpoint({}, path, storage_options={"a": 1})


_KILLED_MID_SAVE = """
import os, sys, time, torch
from lightning_hpu import HPUCheckpointIO
from lightning_hpu.checkpoint.files import process_start_time, remove_orphaned_temporary_files, this_host

def stall(obj, file, *args, **kwargs):
    file.write(b"x" * 4096)  # part of a checkpoint, then the process is killed
    file.flush()
    print("writing", os.getpid(), flush=True)
    time.sleep(600)

torch.save = stall
HPUCheckpointIO().save_checkpoint({"step": 2, "w": torch.zeros(3)}, sys.argv[1])
"""


def _temporary_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def test_the_next_save_removes_what_saves_killed_by_sigkill_left(tmp_path: Path, python_executable: str) -> None:
    """The writers run in the preloaded Python: each is killed mid-save by its own pid (the one its temporary file
    names), as a real process is; a killed writer left unreaped (a zombie) is in the test below."""
    io = HPUCheckpointIO()
    path = tmp_path / "last.ckpt"
    io.save_checkpoint({"step": 1, "w": torch.ones(3)}, path)
    writers = [
        subprocess.Popen([python_executable, "-c", _KILLED_MID_SAVE, str(path)], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    try:
        pids = []
        for writer in writers:  # both mid-save at once (a later save would already clean up the first)
            assert writer.stdout is not None
            line = writer.stdout.readline()
            assert line.startswith("writing "), line
            pids.append(int(line.split()[1]))
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        for pid in pids:
            while process_start_time(pid) is not None:  # killed (a zombie until reaped)
                time.sleep(0.01)
        left = _temporary_files(tmp_path)
        assert len(left) == 2 and all(f".last.ckpt.{this_host()}." in name for name in left)
        assert io.load_checkpoint(path)["step"] == 1  # the kills never broke the checkpoint

        io.save_checkpoint({"step": 3, "w": torch.full((3,), 3.0)}, path)
    finally:
        for writer in writers:
            writer.kill()
            writer.communicate()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["last.ckpt"]
    assert io.load_checkpoint(path)["step"] == 3


def test_temporary_files_of_live_writers_and_other_hosts_are_kept(tmp_path: Path) -> None:
    me, my_start = os.getpid(), process_start_time(os.getpid())
    assert my_start is not None
    sleeper, killed = subprocess.Popen(["sleep", "60"]), subprocess.Popen(["sleep", "60"])
    try:
        sleeper_start, killed_start = process_start_time(sleeper.pid), process_start_time(killed.pid)
        assert sleeper_start is not None and killed_start is not None
        killed.kill()  # left unreaped: a zombie, which never writes again
        while alive(killed.pid):
            time.sleep(0.01)
        host = this_host()
        keep = [
            f".a.ckpt.{host}.{me}.{my_start}.0123abcd.tmp",  # this process, mid-save
            f".a.ckpt.{host}.{sleeper.pid}.{sleeper_start}.0123abcd.tmp",  # another live process
            f".a.ckpt.{host}x.{sleeper.pid + 10**7}.5.0123abcd.tmp",  # another host: its pids are not ours to check
            f".a.ckpt.{sleeper.pid + 10**7}.0123abcd.tmp",  # an unknown naming scheme
            "notes.tmp",
        ]
        remove = [
            f".a.ckpt.{host}.{sleeper.pid + 10**7}.5.0123abcd.tmp",  # no such process
            f".b.ckpt.{host}.{sleeper.pid}.{sleeper_start + 1}.89abcdef.tmp",  # pid reused by a later process
            f".c.ckpt.{host}.{killed.pid}.{killed_start}.0123abcd.tmp",  # killed, not yet reaped
        ]
        for name in keep + remove:
            (tmp_path / name).write_bytes(b"partial")
        removed = remove_orphaned_temporary_files(tmp_path)
    finally:
        for process in (sleeper, killed):
            process.kill()
            process.wait()
    assert sorted(p.name for p in removed) == sorted(remove)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(keep)
    assert remove_orphaned_temporary_files(tmp_path / "missing") == []


@pytest.mark.usefixtures("standin")
def test_the_strategy_setup_cleans_the_checkpoint_directory_before_the_run(tmp_path: Path) -> None:
    from lightning.pytorch import Callback, Trainer
    from lightning.pytorch.callbacks import ModelCheckpoint
    from lightning.pytorch.demos.boring_classes import BoringModel

    host, me, start = this_host(), os.getpid(), process_start_time(os.getpid())
    orphan = tmp_path / f".last.ckpt.{host}.{2**22 + 12345}.7.0123abcd.tmp"  # above Linux's largest pid: dead
    live = tmp_path / f".last.ckpt.{host}.{me}.{start}.89abcdef.tmp"
    for path in (orphan, live):
        path.write_bytes(b"partial")
    seen: list[list[str]] = []

    class SeeDirectory(Callback):
        def on_train_start(self, trainer: Trainer, pl_module: Any) -> None:
            seen.append(sorted(p.name for p in tmp_path.iterdir()))

    never_saves = ModelCheckpoint(dirpath=tmp_path, save_top_k=0, save_last=False)
    trainer = quiet_trainer(
        accelerator="hpu", devices=1, max_steps=1, callbacks=[never_saves, SeeDirectory()], limit_val_batches=0
    )
    trainer.fit(BoringModel())
    assert seen == [[live.name]]
