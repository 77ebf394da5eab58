"""MFU in ``HPUThroughputMonitor``: the peak of the emulated generation and precision, or ``available_flops``."""

from __future__ import annotations

from typing import Any

import pytest

from lightning_hpu import HPUThroughputMonitor
from lightning_hpu.compile.peak_flops import GAUDI_PEAK_FLOPS, compute_precision, gaudi_peak_flops
from lightning_hpu.runtime import settings
from tests.helpers.models import RegressionModel
from tests.helpers.standin import reset_backend
from tests.helpers.trainer import MetricsSpy, quiet_trainer

FLOPS_PER_BATCH = 3e12


def _fit(tmp_path: Any, precision: str, **monitor_kwargs: Any) -> list[dict[str, float]]:
    monitor = HPUThroughputMonitor(
        batch_size_fn=lambda batch: batch[0].shape[0], warmup_steps=1, window_size=2, **monitor_kwargs
    )
    model = RegressionModel()
    model.flops_per_batch = FLOPS_PER_BATCH  # type: ignore[attr-defined]
    spy = MetricsSpy()
    trainer = quiet_trainer(
        tmp_path,
        accelerator="hpu",
        precision=precision,  # type: ignore[arg-type]
        enable_checkpointing=False,
        max_steps=4,
        limit_val_batches=0,
        callbacks=[monitor],
        log_every_n_steps=1,
        logger=spy,
    )
    trainer.fit(model)
    return [m for m in spy.metrics if "train/device/flops_per_sec" in m]


def _emulate(monkeypatch: pytest.MonkeyPatch, device_name: str) -> None:
    monkeypatch.setenv(settings.CPU_DEVICE_NAME_ENV, device_name)
    reset_backend()


@pytest.mark.parametrize(
    ("device_name", "precision", "peak"),
    [("GAUDI2", "bf16-mixed", 432e12), ("GAUDI3", "bf16-mixed", 1835e12), ("GAUDI2", "bf16-true", 432e12)],
)
def test_mfu_against_the_generation_and_precision_peak(
    standin: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Any, device_name: str, precision: str, peak: float
) -> None:
    _emulate(monkeypatch, device_name)
    measured = _fit(tmp_path, precision)
    assert measured, "no FLOPs were logged"
    for metrics in measured:
        assert metrics["train/device/mfu"] == pytest.approx(metrics["train/device/flops_per_sec"] / peak)


def test_available_flops_overrides_the_table(standin: Any, tmp_path: Any) -> None:
    measured = _fit(tmp_path, "32-true", available_flops=1e15)
    assert measured
    for metrics in measured:
        assert metrics["train/device/mfu"] == pytest.approx(metrics["train/device/flops_per_sec"] / 1e15)


def test_no_mfu_without_a_published_peak(standin: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    _emulate(monkeypatch, "GAUDI")
    with pytest.warns(UserWarning, match="No published peak FLOPs for HPU 'GAUDI'"):
        measured = _fit(tmp_path, "bf16-mixed")
    assert measured
    assert all("train/device/mfu" not in metrics for metrics in measured)


def test_peak_table() -> None:
    assert GAUDI_PEAK_FLOPS["GAUDI2"] == {"bf16": 432e12, "fp8": 865e12}
    assert GAUDI_PEAK_FLOPS["GAUDI3"]["bf16"] == 1835e12
    assert gaudi_peak_flops("GAUDI3", "fp8") == 1835e12
    with pytest.warns(UserWarning, match="No published fp32 peak FLOPs for GAUDI2"):
        assert gaudi_peak_flops("GAUDI2", "fp32") is None


@pytest.mark.parametrize(
    ("name", "expected"),
    [("fp8", "fp8"), ("transformer-engine", "fp8"), ("bf16-mixed", "bf16"), ("16-true", "fp16"), ("32-true", "fp32")],
)
def test_compute_precision(name: str, expected: str) -> None:
    class Plugin:
        precision = name

    assert compute_precision(Plugin()) == expected


def test_compute_precision_of_deepspeeds_fp8_side_and_of_names_of_no_table() -> None:
    class FP8Side:
        is_fp8 = True

    class DeepSpeedPlugin:  # the HPU DeepSpeed plugin names DeepSpeed's precision and keeps its fp8 side apart
        precision = "bf16-mixed"
        fp8: FP8Side | None = FP8Side()

    assert compute_precision(DeepSpeedPlugin()) == "fp8"
    DeepSpeedPlugin.fp8 = None
    assert compute_precision(DeepSpeedPlugin()) == "bf16"

    class Quantized:
        precision = "nf4"

    assert compute_precision(Quantized()) == "fp32"


@pytest.mark.parametrize("bad", [0, -1.0, "432e12", True])
def test_available_flops_refuses_non_positive_numbers(bad: Any) -> None:
    with pytest.raises(ValueError, match="`available_flops` must be a positive number"):
        HPUThroughputMonitor(batch_size_fn=len, available_flops=bad)
