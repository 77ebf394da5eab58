"""The emulated bridge's ``utils.experimental``: device queries and the dynamicity tools, over the stand-in.

The emulation modules are imported directly (not through ``habana_frameworks``), as in ``hpu/test_metrics.py``.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from gaudi_standin.bridge.habana_frameworks.torch import hpu
from gaudi_standin.bridge.habana_frameworks.torch.utils import experimental
from gaudi_standin.bridge.habana_frameworks.torch.utils.experimental import detect_recompilation as dynamicity
from lightning_hpu.runtime import settings


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as file:
        return list(csv.DictReader(file))


@pytest.mark.parametrize(("name", "fp16"), [("GAUDI", False), ("GAUDI2", True), ("GAUDI3", True)])
def test_device_type_follows_the_emulated_generation(
    standin: Any, monkeypatch: pytest.MonkeyPatch, name: str, fp16: bool
) -> None:
    monkeypatch.setenv(settings.CPU_DEVICE_NAME_ENV, name)
    from tests.helpers.standin import reset_backend

    reset_backend()
    assert experimental._get_device_type() == experimental.synDeviceType[f"synDevice{name.capitalize()}"]
    assert experimental._is_fp16_supported() is fp16
    assert experimental._is_available()


def test_data_pointers_and_recorded_params(standin: Any) -> None:
    device = standin.torch_device()
    model = nn.Linear(2, 3).to(device)
    model(torch.ones(1, 2, device=device)).sum().backward()
    assert experimental._data_ptr(model.weight) == model.weight.data_ptr() != 0
    assert experimental._data_ptr(torch.ones(2)) == 0  # a host tensor has no device address
    assert experimental._data_ptr(torch.ones(0, device=device)) == 0
    experimental.RECORDED_PARAMS.clear()
    experimental._record_params(model)
    start, size, is_param, is_grad, _ = experimental.RECORDED_PARAMS["/weight"]
    assert (start, size, is_param, is_grad) == (model.weight.data_ptr(), 24, True, False)
    assert experimental.RECORDED_PARAMS["/bias.grad"][1:4] == (12, False, True)


def test_data_dynamicity_counts_batch_shapes(capsys: pytest.CaptureFixture[str]) -> None:
    batches = [torch.ones(4, 2), torch.ones(4, 2), torch.ones(3, 2), (torch.ones(1), torch.ones(2, 2))]
    histogram = experimental.data_dynamicity(batches)
    assert histogram == {(4, 2): 2, (3, 2): 1, ((1,), (2, 2)): 1}
    assert "There is a little dynamicity in input data shapes" in capsys.readouterr().out
    experimental.data_dynamicity([torch.ones(2)] * 3)
    assert "There is no dynamicity" in capsys.readouterr().out


def test_const_shape_dataloader_keeps_one_shape() -> None:
    batches = [torch.full((n, 2), float(i)) for i, n in enumerate([3, 4, 3, 4, 4, 3, 5])]
    first_full = list(experimental.const_shape_dataloader(batches, maxlen=3))
    assert [b.shape[0] for b in first_full] == [4, 4, 4]  # the 4-row batches reached maxlen first
    assert [b[0, 0].item() for b in first_full] == [1.0, 3.0, 4.0]
    longest = list(experimental.const_shape_dataloader(batches, maxlen=10))
    assert len(longest) == 3 and {b.shape[0] for b in longest} in ({3}, {4})
    with pytest.raises(ValueError, match="empty dataloader"):
        experimental.const_shape_dataloader([], maxlen=2)


class _DynamicTail(nn.Module):
    """A linear layer, then a data-dependent selection: a new graph whenever the count of kept values changes."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.layer(x)
        return y[y > 0]


def test_detect_recompilation_names_the_recompiling_modules(lazy_standin: Any, tmp_path: Path) -> None:
    device = lazy_standin.torch_device()
    torch.manual_seed(0)
    net = experimental.detect_recompilation_auto_model(_DynamicTail().to(device), csv_out=str(tmp_path / "out"))
    for rows in [2, 2, 3, 3]:
        net(torch.randn(rows, 4, device=device))
    net.analyse_dynamicity()  # type: ignore[operator]

    counts = {row["Module name"]: int(row["Recompile count"]) for row in _rows(tmp_path / "out_2.csv")}
    # The layer compiles once per input shape (2 and 3 rows); the whole model at least as often.
    assert counts["Net/layer"] == 2
    assert counts["Net"] >= 2
    steps = _rows(tmp_path / "out_1.csv")
    first_of_layer = [row for row in steps if row["Recompiling modules"] == "Net/layer"]
    assert [row["Step"] for row in first_of_layer] == ["0", "2"]
    assert all(row["Comment"] == "Recompiled due to new input shape" for row in first_of_layer)
    logs = net.raw_logs()  # type: ignore[operator]
    assert any("Registering hooks for Net/layer" in line for line in logs)
    assert sum("Recompilation!" in line for line in logs) == sum(counts.values())


def test_detect_recompilation_refuses_a_model_wrapped_twice(lazy_standin: Any, tmp_path: Path) -> None:
    net = experimental.detect_recompilation_auto_model(nn.Linear(2, 2), csv_out=str(tmp_path / "out"))
    with pytest.raises(ValueError, match="already has 'raw_logs'"):
        experimental.detect_recompilation_auto_model(net)


def test_input_hash_keys_shapes_and_autocast_not_values(standin: Any) -> None:
    a, b = torch.ones(2, 3), torch.zeros(2, 3)
    assert hpu.input_hash((a, {"k": 1})) == hpu.input_hash((b, {"k": 1}))
    assert hpu.input_hash((a,)) != hpu.input_hash((torch.ones(3, 2),))
    assert hpu.input_hash((a, 1)) != hpu.input_hash((a, 2))
    with torch.autocast(standin.autocast_device_type, dtype=torch.bfloat16):
        under_autocast = hpu.input_hash((a,))
    assert under_autocast != hpu.input_hash((a,))


def test_utils_experimental_serves_hpu_and_detect_recompilation() -> None:
    assert experimental.hpu is hpu
    assert experimental.hpu.device_count() == hpu.device_count() >= 1
    assert experimental.detect_recompilation is dynamicity
    assert (
        experimental.detect_recompilation.detect_recompilation_auto_model
        is experimental.detect_recompilation_auto_model
    )
