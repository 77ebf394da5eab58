"""What each Gaudi generation should show, from Intel's published figures, and the checks' tolerances.

- HBM per device: 96 GB on Gaudi 2, 128 GB on Gaudi 3 (32 GB on the first Gaudi): Intel Gaudi documentation, and
  Hugging Face's Intel Gaudi pages, which quote it.
- Scale-up link bandwidth per device, one direction: Gaudi 3 has 21 scale-up ports at 200 Gb/s, 21 x 25 GB/s =
  525 GB/s ("Intel Gaudi Network Configuration", docs.habana.ai); Gaudi 2 has 21 scale-up ports at 100 Gb/s
  (24 x 100 GbE RoCE on the chip, 3 of them for scale-out), 21 x 12.5 GB/s = 262.5 GB/s. An all-reduce's bus
  bandwidth (the figure ``hccl_demo`` and ``nccl-tests`` print) approaches the link figure from below.
- bf16 peak FLOPs: :data:`lightning_hpu.compile.peak_flops.GAUDI_PEAK_FLOPS` (with its sources).
"""

from __future__ import annotations

from dataclasses import dataclass

#: Device memory (HBM) of each generation, in bytes (Intel's "96 GB" is 96 GiB: 98304 MiB).
HBM_BYTES = {"GAUDI": 32 * 2**30, "GAUDI2": 96 * 2**30, "GAUDI3": 128 * 2**30}
#: Scale-up bandwidth of one device in one direction, bytes per second.
LINK_BYTES_PER_SECOND = {"GAUDI2": 262.5e9, "GAUDI3": 525e9}

#: The loss must fall by at least this fraction from the first steps to the last.
LOSS_DROP = 0.10
#: The largest relative difference between the per-step losses of eager, compiled and lazy mode (fp32).
MODES_RTOL = 1e-2
#: The largest difference between the final losses of bf16-mixed and fp32, as a fraction of fp32's first loss (a
#: relative difference of final losses would grow as the loss approaches 0).
BF16_TOL = 5e-2
#: The same for fp8 against bf16-mixed.
FP8_TOL = 1e-1
#: The largest fraction of the device's memory the check's small fit may peak at.
MEMORY_FRACTION = 0.5
#: An all-reduce bus bandwidth this fraction of the link figure or more passes on a Gaudi (large messages).
BANDWIDTH_FRACTION = 0.3


@dataclass(frozen=True)
class Generation:
    """A device name's generation and its published figures (``None`` where Intel published none)."""

    name: str
    hbm_bytes: int | None
    link_bytes_per_second: float | None


def generation(device_name: str) -> Generation:
    """The generation of ``device_name`` as the bridge reports it (``GAUDI2``, ``GAUDI3``, ``GAUDI2B``, ...)."""
    upper = device_name.upper()
    for name in sorted(HBM_BYTES, key=len, reverse=True):
        if upper.startswith(name):
            return Generation(name, HBM_BYTES[name], LINK_BYTES_PER_SECOND.get(name))
    return Generation(upper, None, None)


def relative_difference(a: float, b: float) -> float:
    """``|a - b|`` relative to the larger magnitude (0 when both are 0)."""
    scale = max(abs(a), abs(b))
    return abs(a - b) / scale if scale else 0.0


def loss_difference(value: float, reference: float, scale: float) -> float:
    """``|value - reference|`` as a fraction of ``scale`` (the reference fit's first loss); NaN compares as infinite."""
    difference = abs(value - reference) / abs(scale) if scale else float("inf")
    return difference if difference == difference else float("inf")


def loss_falls(losses: list[float]) -> bool:
    """Whether the mean of the last quarter of ``losses`` is at least :data:`LOSS_DROP` below the first quarter's."""
    if len(losses) < 2 or any(loss != loss for loss in losses):
        return False
    quarter = max(1, len(losses) // 4)
    first, last = sum(losses[:quarter]) / quarter, sum(losses[-quarter:]) / quarter
    return last <= first * (1 - LOSS_DROP)
