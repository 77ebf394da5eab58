"""HPUCheckpointIO: host copies of device tensors, atomic writes, CPU loading."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest
import torch

from lightning_hpu import HPUCheckpointIO


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
