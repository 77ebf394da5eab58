"""HPU precision under FSDP, for Fabric; the Trainer's :class:`~lightning_hpu.HPUFSDPPrecisionPlugin` shares it.

Lightning's ``FSDPPrecision`` autocasts on ``"cuda"`` and makes its gradient scaler for CUDA. On HPU the same
precision names map onto FSDP's ``MixedPrecision`` as follows (sharded parameters, the master weights, stay fp32
for the ``-mixed`` precisions; FSDP casts them for compute; the ``FSDP`` column of
:mod:`lightning_hpu.precision.names` says which names run):

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
from lightning_hpu.precision.hpu_precision import hpu_precision
from lightning_hpu.precision.lightning_habana_arguments import check_device
from lightning_hpu.precision.names import PRECISIONS
from lightning_hpu.runtime import HPUConfigurationError, require_backend

#: Why the fp8 names are refused with FSDP: Intel documents fp8 training (its Transformer Engine) on one HPU, with
#: DDP and with DeepSpeed, not under FSDP, so neither a Gaudi2 nor a Gaudi3 is known to run it.
FP8_UNDER_FSDP = (
    "precision={precision!r} does not run with FSDP: Intel documents fp8 training (its Transformer Engine) on one HPU,"
    " with DDP and with DeepSpeed only; use strategy='hpu_deepspeed' (ZeRO shards like FSDP) or 'hpu_ddp' for fp8, or"
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
        meaning = hpu_precision(precision, lightning_check)
        if not meaning.fsdp:
            raise HPUConfigurationError(FP8_UNDER_FSDP.format(precision=meaning.name))
        if meaning.fp16:
            check_fp16_supported()
        self._hpu_scaler: Any = scaler
        if scaler is None and meaning.mixed and meaning.compute == torch.float16:
            from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler

            self._hpu_scaler = ShardedGradScaler(device=require_backend().torch_device().type)
        return meaning.name

    def hpu_forward_context(self) -> AbstractContextManager | None:
        """Autocast on the HPU for the mixed precisions, ``None`` for the others."""
        meaning = PRECISIONS[self.precision]
        if not meaning.mixed:
            return None
        return torch.autocast(device_type=require_backend().autocast_device_type, dtype=meaning.compute)


__all__ = ["HPUFSDPPrecisionHelpers"]
