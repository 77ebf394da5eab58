"""The patch that adds the "HPU available" start-up line beside Lightning's GPU/TPU lines."""

from __future__ import annotations

from typing import Any

from lightning.pytorch.trainer import setup as trainer_setup
from lightning.pytorch.utilities.rank_zero import rank_zero_info

from lightning_hpu.device_info import hpu_device_line
from lightning_hpu.integration.wrapping import MARKER, integration_error


def install() -> None:
    """Make the Trainer's ``_log_device_info`` also log :func:`~lightning_hpu.device_info.hpu_device_line` (once)."""
    original = getattr(trainer_setup, "_log_device_info", None)
    if not callable(original):
        raise integration_error("lightning.pytorch.trainer.setup lacks _log_device_info")
    if hasattr(original, MARKER):
        return

    def log_device_info(trainer: Any) -> None:
        original(trainer)
        rank_zero_info(hpu_device_line(trainer))

    setattr(log_device_info, MARKER, original)
    trainer_setup._log_device_info = log_device_info
