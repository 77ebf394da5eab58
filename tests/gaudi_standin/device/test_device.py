"""The stand-in's HPU is a device of its own: tensors on ``hpu:N``, refused next to host tensors, counted bytes.

Each test would pass on a stand-in that faked the device with the CPU (``device == "cpu"``) only if it failed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import torch
from lightning.pytorch import Callback, LightningModule, Trainer
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from lightning_hpu import HPUAccelerator
from lightning_hpu.runtime import get_backend, require_backend
from tests.helpers.standin import reset_backend
from tests.helpers.trainer import quiet_trainer

HPU0 = torch.device("hpu", 0)
MIXED = "Expected all tensors to be on the same device"


def test_tensors_live_on_hpu(standin: Any) -> None:
    x = torch.randn(2, 3, device="hpu")
    assert x.device == HPU0 and x.is_hpu if hasattr(x, "is_hpu") else x.device == HPU0
    assert torch.ones(2).to("hpu").device == HPU0
    assert torch.arange(4, device=torch.device("hpu")).device == HPU0
    host = x.cpu()
    assert host.device.type == "cpu" and torch.equal(host, x.to("cpu"))
    assert "device='hpu:0'" in repr(x)
    view = x[:, 1:]
    view.mul_(0)  # in place, through a view
    assert torch.equal(x.cpu()[:, 1:], torch.zeros(2, 2)) and view.device == HPU0
    assert (x.sum() + 1).item() == pytest.approx(float(host[:, 0].sum()) + 1)


def test_autograd_and_every_optimizer_path_stay_on_hpu(standin: Any) -> None:
    for options in ({"foreach": False}, {"foreach": True}, {"fused": True}):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)).to("hpu")
        optimizer = torch.optim.AdamW(model.parameters(), lr=0.1, **options)
        before = [p.detach().cpu().clone() for p in model.parameters()]
        model(torch.randn(5, 4, device="hpu")).sum().backward()
        optimizer.step()
        assert all(p.device == HPU0 and p.grad is not None and p.grad.device == HPU0 for p in model.parameters())
        assert all(not torch.equal(b, p.detach().cpu()) for b, p in zip(before, model.parameters(), strict=True))
        state = optimizer.state[next(iter(model.parameters()))]
        assert state["exp_avg"].device == HPU0, options


def test_manual_seed_makes_hpu_random_numbers_reproducible(standin: Any) -> None:
    torch.manual_seed(7)
    first = torch.randn(8, device="hpu")
    torch.manual_seed(7)
    assert torch.equal(first.cpu(), torch.randn(8, device="hpu").cpu())


def test_hpu_and_host_tensors_do_not_mix(standin: Any) -> None:
    x = torch.randn(3, device="hpu")
    with pytest.raises(RuntimeError, match=MIXED):
        x + torch.randn(3)
    with pytest.raises(RuntimeError, match=MIXED):
        nn.Linear(3, 2)(x)  # a module left on the host
    # 0-dim host tensors are accepted, as torch accepts them for CUDA.
    assert (x * torch.tensor(2.0)).device == HPU0


def test_two_hpus_are_two_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIGHTNING_HPU_CPU_DEVICES", "2")
    reset_backend()
    backend = get_backend()
    assert backend is not None and backend.device_count() == 2 == torch.hpu.device_count()
    a, b = torch.ones(2, device="hpu:0"), torch.ones(2, device="hpu:1")
    assert b.device == torch.device("hpu", 1)
    with pytest.raises(RuntimeError, match=MIXED):
        a + b
    assert (a + b.to("hpu:0")).device == HPU0
    with torch.hpu.device(1):
        assert torch.hpu.current_device() == 1 and torch.empty(1, device="hpu").device.index == 1
    assert torch.hpu.current_device() == 0
    with pytest.raises(RuntimeError, match="emulates 2 HPU"):
        torch.ones(1, device="hpu:2")


def test_memory_statistics_count_the_bytes_of_live_tensors(standin: Any) -> None:
    stats = HPUAccelerator().get_device_stats(HPU0)
    before, allocations = stats["InUse"], stats["NumAllocs"]
    tensor = torch.empty(1000, 1000, device="hpu")  # 4,000,000 bytes
    after = torch.hpu.memory_stats()
    assert after["InUse"] - before == 4_000_000 == torch.hpu.memory_allocated() - before
    assert after["NumAllocs"] == allocations + 1 and after["MaxInUse"] >= after["InUse"]
    del tensor
    assert torch.hpu.memory_allocated() == before
    torch.hpu.reset_peak_memory_stats()
    assert torch.hpu.max_memory_allocated() == before


def test_a_host_view_needs_bytes_behind_the_tensor(standin: Any) -> None:
    """Gloo works on host views of hpu tensors; a tensor with no bytes behind it gets a sentence, not a view of
    memory that is not its own (which crashed the process when TorchDynamo traced one with a fake tensor)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    from gaudi_standin import device as hpu_device

    tensor = torch.arange(4.0, device="hpu")
    view = hpu_device.host_view(tensor[1:])
    assert view.device.type == "cpu" and view.tolist() == [1.0, 2.0, 3.0]
    view[0] = 10.0  # the same bytes
    assert tensor[1].item() == 10.0
    refusal = r"host_view: the hpu tensor needs 16 bytes of its storage, which holds 0 .* view a tensor with memory"
    with FakeTensorMode() as fake_mode, pytest.raises(RuntimeError, match=refusal):
        hpu_device.host_view(fake_mode.from_tensor(tensor))
    tensor.untyped_storage().resize_(0)  # as FSDP frees an unsharded parameter
    with pytest.raises(RuntimeError, match=refusal):
        hpu_device.host_view(tensor)
    assert hpu_device.host_view(torch.empty(0, device="hpu")).shape == (0,)


def test_memory_beyond_the_emulated_hbm_is_out_of_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIGHTNING_HPU_CPU_DEVICE_NAME", "GAUDI")  # 32 GiB
    reset_backend()
    require_backend()
    with pytest.raises(torch.OutOfMemoryError, match="HPU out of memory"):
        torch.empty(33 * 2**30, dtype=torch.uint8, device="hpu")


def test_autocast_uses_the_bridges_op_lists(standin: Any) -> None:
    x = torch.randn(4, 4, device="hpu")
    with torch.autocast("hpu", dtype=torch.bfloat16):
        assert torch.mm(x, x).dtype == torch.bfloat16  # lower precision
        assert (x * x).dtype == torch.bfloat16  # mul is in the bridge's list, not in CUDA's or the CPU's
        assert torch.exp(x.bfloat16()).dtype == torch.float32  # fp32 list
        assert torch.add(x, x).dtype == torch.float32  # in no list: as it came
    assert torch.mm(x, x).dtype == torch.float32


class _PlacementCheck(Callback):
    def __init__(self) -> None:
        self.devices: set[torch.device] = set()

    def on_train_batch_start(self, trainer: Trainer, pl_module: LightningModule, batch: Any, batch_idx: int) -> None:
        self.devices |= {tensor.device for tensor in batch} | {p.device for p in pl_module.parameters()}

    def on_train_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        # The end of the fit, before Lightning's teardown moves the model back to the host (as on any accelerator).
        self.devices |= {p.device for p in pl_module.parameters()}


class _Model(LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.layer = nn.Linear(4, 1)
        self.extra = torch.ones(1)  # a plain attribute: Lightning does not move it

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        return nn.functional.mse_loss(self.layer(x) + self.extra, y)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.1)


def _fit(model: LightningModule, tmp_path: Path, ckpt_path: str | None = None, **kwargs: Any) -> Trainer:
    data = TensorDataset(torch.randn(8, 4), torch.randn(8, 1))
    options = {"max_steps": 2, **kwargs}
    trainer = quiet_trainer(tmp_path, accelerator="hpu", devices=1, **options)
    trainer.fit(model, DataLoader(data, batch_size=4), ckpt_path=ckpt_path)
    return trainer


def test_a_tensor_the_script_forgot_to_move_fails_as_on_a_gaudi(standin: Any, tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match=MIXED):
        _fit(_Model(), tmp_path, enable_checkpointing=False)


def test_fit_puts_parameters_and_batches_on_hpu_and_checkpoints_on_the_host(standin: Any, tmp_path: Path) -> None:
    model = _Model()
    model.extra = nn.Parameter(torch.ones(1))  # now a parameter: moved with the model
    check = _PlacementCheck()
    trainer = _fit(model, tmp_path, callbacks=[check])
    assert check.devices == {HPU0}
    path = tmp_path / "model.ckpt"
    trainer.save_checkpoint(path)
    # A Python that never imported lightning_hpu, without the stand-in, loads it with plain torch.load.
    script = textwrap.dedent(
        f"""
        import sys, torch
        checkpoint = torch.load({str(path)!r}, weights_only=True)
        devices = {{t.device.type for t in checkpoint["state_dict"].values()}}
        assert devices == {{"cpu"}}, devices
        assert "lightning_hpu" not in sys.modules
        print("ok")
        """
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LIGHTNING_HPU", "PT_HPU"))}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
    # Resume restores every tensor onto the HPU.
    resumed = _Model()
    resumed.extra = nn.Parameter(torch.zeros(1))
    check = _PlacementCheck()
    _fit(resumed, tmp_path, max_steps=3, ckpt_path=str(path), callbacks=[check])
    assert check.devices == {HPU0}
    assert float(resumed.extra.detach().cpu()) != 0.0


def test_a_process_exits_cleanly_after_backward_on_hpu(tmp_path: Path) -> None:
    script = "import torch\nx = torch.randn(64, 64, device='hpu', requires_grad=True)\n(x @ x).sum().backward()\n"
    env = {**os.environ, "LIGHTNING_HPU_BACKEND": "cpu"}
    # Three at once: the abort at exit showed under load, and side by side they overlap on the cores.
    runs = [
        subprocess.Popen([sys.executable, "-c", script], env=env, stderr=subprocess.PIPE, text=True) for _ in range(3)
    ]
    for run in runs:
        stderr = run.communicate(timeout=120)[1]
        assert run.returncode == 0 and "terminate" not in stderr and "Warning" not in stderr, stderr


def test_a_cpu_backward_before_any_hpu_work_leaves_hpu_autograd_working(python_executable: str) -> None:
    """torch fixes its accelerator at the first backward pass; the device loads with torch, so hpu is it."""
    script = textwrap.dedent(
        """
        import torch
        reference = torch.randn(3, requires_grad=True)
        (reference * 2).sum().backward()  # a single-process reference on the host, before any HPU work
        x = torch.randn(3, device="hpu", requires_grad=True)
        (x * 3).sum().backward()
        # torch (Dynamo, for one) asks for the accelerator's module by attribute: the emulated bridge module.
        print(x.grad.device, torch.accelerator.current_accelerator(), torch.hpu.__name__)
        """
    )
    env = {**os.environ, "LIGHTNING_HPU_BACKEND": "cpu"}
    done = subprocess.run([python_executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["hpu:0", "hpu", "gaudi_standin.bridge.habana_frameworks.torch.hpu"], done.stdout
    # Without the start-up loading, the same script is refused in one sentence saying what to do.
    env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    # (On a CUDA build of torch, CUDA is then the accelerator, and the sentence says that.)
    refusal = (
        "is a CUDA build, and the CPU stand-in's hpu device loaded only after"
        if torch.version.cuda
        else ("torch settled on having no accelerator")
    )
    assert done.returncode != 0 and refusal in done.stderr, done.stderr[-3000:]
