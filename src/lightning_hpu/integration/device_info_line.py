"""The "HPU available" start-up line beside Lightning's GPU/TPU lines:
``HPU available: True (GAUDI2, eager), using: 8 HPUs``.

The mode is in it since the same script trains very differently in eager mode (current Gaudi software's default,
``torch.compile`` for speed) and in the legacy lazy mode.
"""

from __future__ import annotations

from typing import Any

from lightning.pytorch.trainer import setup as trainer_setup
from lightning.pytorch.utilities.rank_zero import rank_zero_info

from lightning_hpu.integration.wrapping import MARKER, integration_error
from lightning_hpu.runtime import bridge_emulated, get_backend, hpu_expected
from lightning_hpu.support.wording import counted


def install() -> None:
    """Make the Trainer's ``_log_device_info`` also log :func:`hpu_device_line` (once), where HPUs are expected."""
    original = getattr(trainer_setup, "_log_device_info", None)
    if not callable(original):
        raise integration_error("lightning.pytorch.trainer.setup lacks _log_device_info")
    if hasattr(original, MARKER):
        return

    def log_device_info(trainer: Any) -> None:
        original(trainer)
        if hpu_expected():  # a CPU or CUDA machine sees Lightning's lines only, as without lightning-hpu
            rank_zero_info(hpu_device_line(trainer))

    setattr(log_device_info, MARKER, original)
    trainer_setup._log_device_info = log_device_info


def hpu_device_line(trainer: Any) -> str:
    """``HPU available: <bool> (<generation>, <mode>[, CPU stand-in]), using: <n> HPUs`` for this Trainer (Lightning's
    own lines' form; ``1 HPU`` for one)."""
    from lightning_hpu.pytorch.accelerator import HPUAccelerator

    backend = get_backend()
    if backend is None or not backend.is_available():
        return "HPU available: False, using: 0 HPUs"
    used = isinstance(trainer.accelerator, HPUAccelerator)
    standin = bridge_emulated()
    details = []
    # On a Gaudi, asking for the device name acquires the device: only when this run uses it.
    if used or standin:
        details.append(backend.device_name())
    details.append("lazy" if backend.is_lazy() else "eager")
    if standin:
        details.append("CPU stand-in")
    count = trainer.num_devices if used else 0
    return f"HPU available: True ({', '.join(details)}), using: {counted(count, 'HPU')}"
