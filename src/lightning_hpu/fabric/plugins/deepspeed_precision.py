"""DeepSpeed precision for Lightning Fabric on HPU: Lightning's ``DeepSpeedPrecision`` with the fp8 hooks both trees
share (:class:`~lightning_hpu.precision.deepspeed.FP8DeepSpeedPrecisionHooks`)."""

from __future__ import annotations

from lightning.fabric.plugins.precision import DeepSpeedPrecision

from lightning_hpu.precision.deepspeed import FP8DeepSpeedPrecisionHooks


class HPUDeepSpeedPrecision(FP8DeepSpeedPrecisionHooks, DeepSpeedPrecision):
    """Fabric's DeepSpeed precision on HPU, with ``"fp8"``: see :class:`lightning_hpu.HPUDeepSpeedPrecisionPlugin`.

    ``Fabric(accelerator="hpu", strategy="deepspeed", precision=...)`` maps here.
    """
