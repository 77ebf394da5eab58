"""The start-up line that tells which HPU runs and how: ``HPU available: True (GAUDI2, eager), using: 8 HPUs``.

Printed on rank zero beside Lightning's ``GPU available`` / ``TPU available`` lines (hooked in by
:mod:`lightning_hpu.integration`). The mode matters since the same script trains very differently in eager mode
(current Gaudi software's default, ``torch.compile`` for speed) and in the legacy lazy mode.
"""

from __future__ import annotations

from typing import Any

from lightning_hpu.runtime import bridge_emulated, get_backend


def hpu_device_line(trainer: Any) -> str:
    """``HPU available: <bool> (<generation>, <mode>[, CPU stand-in]), using: <n> HPUs`` for this Trainer."""
    from lightning_hpu.accelerator import HPUAccelerator

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
    return f"HPU available: True ({', '.join(details)}), using: {count} HPUs"
