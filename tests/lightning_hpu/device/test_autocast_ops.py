"""Autocast op-list overrides: files with exactly the ops given, the bridge's variables, and the import-order rule."""

from __future__ import annotations

import os
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

import pytest

import lightning_hpu
from lightning_hpu import HPUPrecisionPlugin, set_autocast_op_lists
from lightning_hpu.device.autocast_ops import FP32_OPS_ENV, LOWER_PRECISION_OPS_ENV


@pytest.fixture(autouse=True)
def _restore_op_list_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    # Registered with monkeypatch so the variables the code sets are removed after each test.
    monkeypatch.delenv(LOWER_PRECISION_OPS_ENV, raising=False)
    monkeypatch.delenv(FP32_OPS_ENV, raising=False)
    # As in a process where the bridge has not loaded yet (lazy mode on a Gaudi, where torch does not autoload it).
    monkeypatch.delitem(sys.modules, "habana_frameworks.torch", raising=False)


def test_plugin_writes_exactly_the_given_ops(standin: Any) -> None:
    plugin = HPUPrecisionPlugin(
        "bf16-mixed", autocast_lower_precision_ops=["linear", "matmul", "bmm"], autocast_fp32_ops=["softmax"]
    )
    lower, fp32 = Path(os.environ[LOWER_PRECISION_OPS_ENV]), Path(os.environ[FP32_OPS_ENV])
    assert lower.read_text() == "linear\nmatmul\nbmm\n"
    assert fp32.read_text() == "softmax\n"
    assert plugin.autocast_op_list_files == {LOWER_PRECISION_OPS_ENV: str(lower), FP32_OPS_ENV: str(fp32)}
    # In a temporary directory, never inside the installed package.
    assert lower.parent == fp32.parent
    assert lower.is_relative_to(tempfile.gettempdir())
    assert not lower.is_relative_to(Path(lightning_hpu.__file__).parent.parent)


def test_one_list_leaves_the_other_variable_alone(standin: Any) -> None:
    files = set_autocast_op_lists(fp32_ops=["layer_norm", "exp"])
    assert list(files) == [FP32_OPS_ENV]
    assert LOWER_PRECISION_OPS_ENV not in os.environ
    assert Path(os.environ[FP32_OPS_ENV]).read_text().splitlines() == ["layer_norm", "exp"]
    assert set_autocast_op_lists() == {}


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"autocast_lower_precision_ops": "linear"}, TypeError, "`autocast_lower_precision_ops` must be a list"),
        ({"autocast_fp32_ops": ["soft max"]}, ValueError, r"`autocast_fp32_ops` holds \['soft max'\]"),
        ({"autocast_fp32_ops": ["exp", "exp"]}, ValueError, r"`autocast_fp32_ops` names \['exp'\] more than once"),
        (
            {"autocast_lower_precision_ops": ["mm"], "autocast_fp32_ops": ["mm"]},
            ValueError,
            r"\['mm'\] appear in both",
        ),
    ],
)
def test_bad_lists_are_refused_before_anything_is_written(
    standin: Any, kwargs: dict[str, Any], error: type, match: str
) -> None:
    with pytest.raises(error, match=match):
        HPUPrecisionPlugin("bf16-mixed", **kwargs)
    assert LOWER_PRECISION_OPS_ENV not in os.environ and FP32_OPS_ENV not in os.environ


@pytest.mark.parametrize("precision", ["32-true", "bf16-true", "16-true"])
def test_lists_need_an_autocast_precision(standin: Any, precision: str) -> None:
    with pytest.raises(ValueError, match=f"`autocast_fp32_ops` needs autocast, but precision='{precision}'"):
        HPUPrecisionPlugin(precision, autocast_fp32_ops=["softmax"])
    assert FP32_OPS_ENV not in os.environ


def test_lists_cannot_change_once_the_bridge_is_imported(standin: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    files = set_autocast_op_lists(lower_precision_ops=["linear"])
    monkeypatch.setitem(sys.modules, "habana_frameworks.torch", types.ModuleType("habana_frameworks.torch"))
    # The lists the bridge started with (e.g. inherited by a child process) are accepted as they are.
    assert HPUPrecisionPlugin("bf16-mixed", autocast_lower_precision_ops=["linear"]).autocast_op_list_files == files
    with pytest.raises(RuntimeError, match=r"habana_frameworks.torch\) is already imported"):
        HPUPrecisionPlugin("bf16-mixed", autocast_lower_precision_ops=["linear", "matmul"])
    with pytest.raises(RuntimeError, match="already imported"):
        set_autocast_op_lists(fp32_ops=["softmax"])
    assert Path(os.environ[LOWER_PRECISION_OPS_ENV]).read_text() == "linear\n"
    assert FP32_OPS_ENV not in os.environ
