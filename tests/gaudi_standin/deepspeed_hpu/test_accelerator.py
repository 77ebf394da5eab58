"""DeepSpeed's accelerator on the stand-in: the CPU accelerator's host ops, addressing the stand-in's ``hpu`` device
and its ``hccl`` group, with the device generation (not the host CPU) deciding fp16, as DeepSpeed's HPU accelerator."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from gaudi_standin.bridge.habana_frameworks.torch import hpu
from gaudi_standin.deepspeed_hpu import accelerator as standin_accelerator
from tests.helpers.standin import reset_backend


@pytest.fixture
def installed(standin: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The stand-in's accelerator, installed for one test (DeepSpeed's own choice is put back afterwards)."""
    from deepspeed.accelerator import real_accelerator

    monkeypatch.setattr(real_accelerator, "ds_accelerator", None)
    return standin_accelerator.install()


def test_it_addresses_the_hpu_and_its_hccl_group(installed: Any) -> None:
    from deepspeed.accelerator import get_accelerator

    assert get_accelerator() is installed and standin_accelerator.install() is installed  # installed once
    assert installed.device_name() == "hpu" and installed.communication_backend_name() == "hccl"
    assert installed.current_device_name() == f"hpu:{hpu.current_device()}"
    tensor = installed.FloatTensor([1.0, 2.0])
    assert tensor.device.type == "hpu" and installed.on_accelerator(tensor)
    assert not installed.on_accelerator(torch.ones(1))
    assert installed.total_memory() == hpu.mem_get_info()[1]
    assert installed.create_op_builder("ShareMemCommBuilder") is None  # collectives go through the hccl group


def test_the_generation_decides_fp16(installed: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIGHTNING_HPU_CPU_DEVICE_NAME", "GAUDI2")
    reset_backend()
    assert installed.is_fp16_supported() and torch.half in installed.supported_dtypes()
    monkeypatch.setenv("LIGHTNING_HPU_CPU_DEVICE_NAME", "GAUDI")
    reset_backend()
    assert not installed.is_fp16_supported() and torch.half not in installed.supported_dtypes()
