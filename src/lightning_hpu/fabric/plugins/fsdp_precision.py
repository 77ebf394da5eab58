"""FSDP precision for Lightning Fabric on HPU: Lightning's ``FSDPPrecision`` with the mixin both trees share
(:class:`~lightning_hpu.precision.fsdp.HPUFSDPPrecisionHelpers`)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from lightning.fabric.plugins.precision.fsdp import FSDPPrecision
from typing_extensions import override

from lightning_hpu.precision.fsdp import HPUFSDPPrecisionHelpers
from lightning_hpu.precision.lightning_habana_arguments import HPU_DEVICE


class HPUFSDPPrecision(HPUFSDPPrecisionHelpers, FSDPPrecision):
    """Fabric precision for :class:`~lightning_hpu.fabric.HPUFSDPStrategy` (see the module docstring)."""

    def __init__(self, precision: str = "32-true", scaler: Any | None = None, *, device: str = HPU_DEVICE) -> None:
        name = self._init_for_hpu(precision, scaler, device)
        self.precision = name  # Lightning checks the scaler against ``self.precision`` before setting it
        super().__init__(name, scaler=self._hpu_scaler)  # type: ignore[arg-type]
        self.scaler = self._hpu_scaler  # Lightning drops a scaler it is given (it keeps only the one it makes)

    @override
    def forward_context(self) -> AbstractContextManager:
        return self.hpu_forward_context() or super().forward_context()
