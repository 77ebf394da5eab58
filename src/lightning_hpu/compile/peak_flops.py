"""Peak FLOPs of each Gaudi generation per compute precision: the denominator of model FLOPs utilisation (MFU).

One table, with its sources. The figures are the vendor's dense matrix-engine (MME) peaks, as Lightning's own
table of CUDA peaks gives the datasheet figure of each GPU:

- GAUDI2, bf16 432 TFLOPS and fp8 865 TFLOPS: Intel Gaudi 2 AI accelerator product brief and the Habana Gaudi2
  white paper (matrix-multiplication engine, dense).
- GAUDI3, bf16 and fp8 1835 TFLOPS: "Intel Gaudi 3 AI Accelerator White Paper" (2024), the OAM part (HL-325L)
  at its published clock. The same white paper's figure for parts run at 1600 MHz is 1677 TFLOPS; the table
  takes 1835 because it is the figure Intel publishes as the device's peak (the one comparisons quote), and an
  MFU against a peak the part cannot reach only overstates headroom. On a 1600 MHz part pass
  ``available_flops=1677e12``.
- GAUDI (first generation): Habana published no peak FLOPs figure for it, so there is no row; MFU is not logged
  there unless ``available_flops`` is given.

fp32 and fp16 have no row either: no published dense peak for those precisions was found for any generation.
"""

from __future__ import annotations

from typing import Any

from lightning.fabric.utilities.rank_zero import rank_zero_warn

from lightning_hpu.precision.names import lookup

#: Dense peak FLOPs per second of one device, by generation (as ``get_device_name`` reports it) and precision.
GAUDI_PEAK_FLOPS: dict[str, dict[str, float]] = {
    "GAUDI2": {"bf16": 432e12, "fp8": 865e12},
    "GAUDI3": {"bf16": 1835e12, "fp8": 1835e12},
}


def compute_precision(precision_plugin: Any) -> str:
    """The precision the matrix engine computes in under a precision plugin: ``fp8``, ``bf16``, ``fp16``, ``fp32``.

    Every Lightning and HPU precision plugin names its precision in ``precision`` (``"bf16-mixed"``, ``"fp8"``,
    Lightning's ``"transformer-engine"``, ...), which :mod:`lightning_hpu.precision.names` reads; the HPU's DeepSpeed
    plugin names DeepSpeed's (``"bf16-mixed"``) and keeps its fp8 side apart. A name the table does not know (a
    quantization plugin's) computes in fp32.
    """
    fp8_side = getattr(precision_plugin, "fp8", None)
    if getattr(fp8_side, "is_fp8", False):
        return "fp8"
    meaning = lookup(getattr(precision_plugin, "precision", "32-true"))
    return meaning.matmul_precision if meaning is not None else "fp32"


def generation_row(device_name: str) -> str | None:
    """The table row of a device name such as ``"GAUDI2"`` or ``"GAUDI3"`` (suffixes such as ``"GAUDI2B"`` too)."""
    name = device_name.upper()
    for generation in sorted(GAUDI_PEAK_FLOPS, key=len, reverse=True):
        if name.startswith(generation):
            return generation
    return None


def gaudi_peak_flops(device_name: str, precision: str) -> float | None:
    """The peak FLOPs per second of one ``device_name`` device computing in ``precision``; ``None`` (with a warning)
    where the table has no published figure."""
    row = generation_row(device_name)
    if row is None:
        rank_zero_warn(
            f"No published peak FLOPs for HPU {device_name!r}: MFU is not logged. Pass"
            " `HPUThroughputMonitor(available_flops=...)` to set the peak yourself."
        )
        return None
    peak = GAUDI_PEAK_FLOPS[row].get(precision)
    if peak is None:
        rank_zero_warn(
            f"No published {precision} peak FLOPs for {row}: MFU is not logged. Pass"
            " `HPUThroughputMonitor(available_flops=...)` to set the peak yourself."
        )
    return peak
