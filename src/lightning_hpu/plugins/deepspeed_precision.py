"""DeepSpeed precision on HPU: Lightning's DeepSpeed precisions, plus fp8 with the Intel Gaudi Transformer Engine."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any

from lightning.pytorch.plugins.precision import DeepSpeedPrecision
from torch.nn import Module
from typing_extensions import override

from lightning_hpu.fabric.precision import PRECISION_ALIASES, HPUPrecision
from lightning_hpu.fp8.engine import LayerFilter

#: What DeepSpeed itself runs outside the engine's fp8 layers, per fp8 precision.
_DEEPSPEED_PRECISION_OF_FP8 = {"fp8": "bf16-mixed", "fp8-float16": "16-mixed"}


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
        name = PRECISION_ALIASES.get(str(precision), str(precision))
        #: The fp8 side (engine, recipe, layer swap) when the precision is an fp8 one.
        self.fp8: HPUPrecision | None = None
        if name in _DEEPSPEED_PRECISION_OF_FP8:
            self.fp8 = HPUPrecision(name, fp8_recipe=fp8_recipe, fp8_layer_filter=fp8_layer_filter)
            name = _DEEPSPEED_PRECISION_OF_FP8[name]
        elif fp8_recipe is not None or fp8_layer_filter is not None:
            raise ValueError(f"`fp8_recipe` and `fp8_layer_filter` apply to precision='fp8' only, not {precision!r}.")
        # ``precision`` is what DeepSpeed's config is built from: bf16 (or fp16) outside the fp8 layers.
        super().__init__(name)  # type: ignore[arg-type]

    @override
    def convert_module(self, module: Module) -> Module:
        if self.fp8 is not None:
            module = self.fp8.convert_module(module)
        return super().convert_module(module)

    @override
    def forward_context(self) -> AbstractContextManager:
        if self.fp8 is not None:
            return self.fp8.fp8_autocast()
        return super().forward_context()
