"""DeepSpeed precision on HPU: Lightning's DeepSpeed precisions, plus fp8 with the Intel Gaudi Transformer Engine."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any

from lightning.pytorch.plugins.precision import DeepSpeedPrecision
from torch.nn import Module
from typing_extensions import override

from lightning_hpu.fabric.deepspeed_precision import split_fp8_precision
from lightning_hpu.fp8.engine import LayerFilter


class HPUDeepSpeedPrecisionPlugin(DeepSpeedPrecision):
    """DeepSpeed precision for :class:`~lightning_hpu.HPUDeepSpeedStrategy`, with ``"fp8"``.

    ``Trainer(accelerator="hpu", strategy="deepspeed", precision=...)`` maps here. Lightning's DeepSpeed precisions
    behave as in Lightning. ``"fp8"`` (Lightning's ``"transformer-engine"``) swaps the ``nn.Linear`` layers for the
    Transformer Engine's, keeping their weights, runs each step's forward under the engine's ``fp8_autocast``, and
    runs everything else in DeepSpeed's bf16 (``"fp8-float16"``: fp16, Gaudi2 and later). For fp8 *inference*
    (also under DeepSpeed inference) use the :class:`~lightning_hpu.HPUFp8Inference` callback.

    Args:
        precision: a Lightning DeepSpeed precision, ``"fp8"`` or ``"fp8-float16"`` (or their Lightning names).
        fp8_recipe: fp8 only: the engine's ``DelayedScaling`` recipe or a dict of its arguments.
        fp8_layer_filter: fp8 only: ``(qualified_name, layer) -> bool`` choosing the layers that run in fp8.
    """

    def __init__(
        self,
        precision: str,
        *,
        fp8_recipe: Any | Mapping[str, Any] | None = None,
        fp8_layer_filter: LayerFilter | None = None,
    ) -> None:
        # ``precision`` is what DeepSpeed's config is built from: bf16 (or fp16) outside the fp8 layers; ``fp8`` is
        # the fp8 side (engine, recipe, layer swap) when the precision is an fp8 one.
        name, self.fp8 = split_fp8_precision(precision, fp8_recipe, fp8_layer_filter)
        super().__init__(name)  # type: ignore[arg-type]

    @override
    def convert_module(self, module: Module) -> Module:
        if self.fp8 is not None:
            module = self.fp8.convert_module(module)
        return super().convert_module(module)

    @override
    def forward_context(self) -> AbstractContextManager:
        return self.fp8.fp8_autocast() if self.fp8 is not None else super().forward_context()
