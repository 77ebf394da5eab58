"""HPU precision under FSDP for the Trainer: the Fabric plugin's rules, plus clipping by norm across shards."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from lightning.pytorch.plugins.precision.fsdp import FSDPPrecision
from torch.nn import Module
from torch.optim import Optimizer
from typing_extensions import override

from lightning_hpu.precision.fsdp import HPUFSDPPrecisionHelpers
from lightning_hpu.precision.lightning_habana_arguments import HPU_DEVICE
from lightning_hpu.support.old_paths import names_of


class HPUFSDPPrecisionPlugin(HPUFSDPPrecisionHelpers, FSDPPrecision):
    """Trainer precision for :class:`~lightning_hpu.HPUFSDPStrategy`; ``Trainer(precision=...)`` maps here.

    See :mod:`lightning_hpu.precision.fsdp` for how each precision maps onto FSDP's mixed precision.
    Clipping by norm (``gradient_clip_val``) uses the root FSDP module's ``clip_grad_norm_``, which sums the
    squared norms of every shard across processes before scaling, so the clip is the one a single device would do.
    """

    def __init__(self, precision: str = "32-true", scaler: Any | None = None, *, device: str = HPU_DEVICE) -> None:
        name = self._init_for_hpu(precision, scaler, device)
        self.precision = name  # Lightning checks the scaler against ``self.precision`` before setting it
        super().__init__(name, scaler=self._hpu_scaler)  # type: ignore[arg-type]
        self.scaler = self._hpu_scaler  # Lightning drops a scaler it is given (it keeps only the one it makes)
        #: The root FSDP module, set by the strategy once it has wrapped the model.
        self.sharded_module: Module | None = None

    @override
    def forward_context(self) -> AbstractContextManager:
        return self.hpu_forward_context() or super().forward_context()

    @override
    def clip_grad_by_norm(self, optimizer: Optimizer, clip_val: int | float) -> None:
        module = self.sharded_module
        clip_grad_norm = getattr(module, "clip_grad_norm_", None)
        if clip_grad_norm is None:
            raise RuntimeError(
                "Clipping by norm under FSDP needs the root module wrapped in FullyShardedDataParallel; let the"
                " strategy wrap it (do not wrap it yourself in configure_model) or clip by value."
            )
        clip_grad_norm(float(clip_val))


#: lightning-habana's names of this module path (docs/guide/coming-from-lightning-habana.md), read when first asked.
__getattr__ = names_of(__name__)
