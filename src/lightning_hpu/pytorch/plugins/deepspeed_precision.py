"""DeepSpeed precision on HPU: Lightning's DeepSpeed precisions, plus fp8 with the Intel Gaudi Transformer Engine."""

from __future__ import annotations

from lightning.pytorch.plugins.precision import DeepSpeedPrecision

from lightning_hpu.precision.deepspeed import FP8DeepSpeedPrecisionHooks


class HPUDeepSpeedPrecisionPlugin(FP8DeepSpeedPrecisionHooks, DeepSpeedPrecision):
    """DeepSpeed precision for :class:`~lightning_hpu.HPUDeepSpeedStrategy`, with ``"fp8"``.

    ``Trainer(accelerator="hpu", strategy="deepspeed", precision=...)`` maps here. Lightning's DeepSpeed precisions
    behave as in Lightning. ``"fp8"`` swaps the ``nn.Linear`` layers for the Transformer Engine's, keeping their
    weights, runs each step's forward under the engine's ``fp8_autocast``, and runs everything else in DeepSpeed's
    ``"bf16-mixed"`` (``"fp8-float16"``: ``"16-mixed"``, Gaudi2 and later); Lightning's ``"transformer-engine"``
    does the same on DeepSpeed's ``"bf16-true"`` (bf16 weights, as in Lightning). For fp8 *inference*
    (also under DeepSpeed inference) use the :class:`~lightning_hpu.HPUFp8Inference` callback.

    Args:
        precision: a Lightning DeepSpeed precision, ``"transformer-engine"`` (``"-float16"``), ``"fp8"`` or
            ``"fp8-float16"``.
        fp8_recipe: fp8 only: the engine's ``DelayedScaling`` recipe or a dict of its arguments.
        fp8_layer_filter: fp8 only: ``(qualified_name, layer) -> bool`` choosing the layers that run in fp8.
        device: lightning-habana's argument, accepted as ``"hpu"`` only.
    """
