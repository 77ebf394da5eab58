"""HPU precision under FSDP, for Fabric; the Trainer's :class:`~lightning_hpu.HPUFSDPPrecisionPlugin` shares it.

Lightning's ``FSDPPrecision`` autocasts on ``"cuda"`` and makes its gradient scaler for CUDA. On HPU the same
precision names map onto FSDP's ``MixedPrecision`` as follows (sharded parameters, the master weights, stay fp32
for the ``-mixed`` precisions; FSDP casts them for compute):

=============  ===========  =============================  ===========
precision      compute      gradient reduce-scatter        autocast
=============  ===========  =============================  ===========
``32-true``    fp32         fp32                           no
``bf16-mixed`` bf16         bf16 (HCCL reduces it natively) on the HPU
``16-mixed``   fp16         fp16, with a sharded scaler    on the HPU
``bf16-true``  bf16         bf16                           no
``16-true``    fp16         fp16                           no
=============  ===========  =============================  ===========

The reduce dtype follows the compute dtype, as in Lightning: half the traffic of fp32. For fp32 reductions pass
``mixed_precision=MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)`` to the strategy.
fp16 needs Gaudi2 or later.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

import torch

from lightning_hpu.device.generation_rules import check_fp16_supported
from lightning_hpu.precision.hpu_precision import normalize_precision
from lightning_hpu.precision.lightning_habana_arguments import check_device
from lightning_hpu.runtime import HPUConfigurationError, require_backend

#: Why ``precision="fp8"`` is refused with FSDP: Intel documents fp8 training (its Transformer Engine) on one HPU, with
#: DDP and with DeepSpeed, not under FSDP, so neither a Gaudi2 nor a Gaudi3 is known to run it.
FP8_UNDER_FSDP = (
    "precision='fp8' does not run with FSDP: Intel documents fp8 training (its Transformer Engine) on one HPU, with"
    " DDP and with DeepSpeed only; use strategy='hpu_deepspeed' (ZeRO shards like FSDP) or 'hpu_ddp' for fp8, or"
    " precision='bf16-mixed' with FSDP."
)


class HPUFSDPPrecisionHelpers:
    """HPU autocast, the fp16 device check and an HPU gradient scaler for an ``FSDPPrecision`` subclass."""

    precision: Any
    device: str
    scaler: Any

    def _init_for_hpu(self, precision: str, scaler: Any | None, device: str) -> str:
        """Check ``precision`` for this device; return its full name (accepts Lightning's short aliases).

        ``device`` is lightning-habana's argument (``"hpu"`` only); its plugins took it second, where Lightning's
        take the scaler, so a string in the scaler's place is read as that device.
        """
        if isinstance(scaler, str):
            device, scaler = scaler, None
        self.device = check_device(device)
        # Lightning's FSDP plugin (the class after this mixin) refuses what the HPU does not run: its words first.
        lightning_check = lambda: super(HPUFSDPPrecisionHelpers, self).__init__(precision)  # type: ignore[call-arg]  # noqa: E731
        name = normalize_precision(precision, lightning_check)
        if name.startswith("fp8"):
            raise HPUConfigurationError(FP8_UNDER_FSDP)
        if "16-" in name and not name.startswith("bf16"):
            check_fp16_supported()
        self._hpu_scaler: Any = scaler
        if scaler is None and name == "16-mixed":
            from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler

            self._hpu_scaler = ShardedGradScaler(device=require_backend().torch_device().type)
        return name

    def hpu_forward_context(self) -> AbstractContextManager | None:
        """Autocast on the HPU for the mixed precisions, ``None`` for the others."""
        if "mixed" not in self.precision:
            return None
        dtype = torch.bfloat16 if self.precision == "bf16-mixed" else torch.float16
        return torch.autocast(device_type=require_backend().autocast_device_type, dtype=dtype)


__all__ = ["HPUFSDPPrecisionHelpers"]
