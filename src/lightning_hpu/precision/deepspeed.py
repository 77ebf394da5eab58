"""DeepSpeed precision on HPU for Fabric, and the fp8 split shared with the Trainer's plugin.

DeepSpeed builds its engine from a Lightning precision name (bf16 or fp16 config); fp8 adds the Transformer
Engine's layers and ``fp8_autocast`` on top. :func:`split_fp8_precision` turns a precision name into the DeepSpeed
precision to configure (the ``deepspeed`` column of :mod:`lightning_hpu.precision.names`: ``"fp8"`` runs DeepSpeed's
``"bf16-mixed"``, Lightning's ``"transformer-engine"`` its ``"bf16-true"``) and the fp8 side (an
:class:`HPUPrecision`), for Fabric and the Trainer alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any

from torch.nn import Module
from typing_extensions import override

from lightning_hpu.fp8.engine import LayerFilter
from lightning_hpu.precision.hpu_precision import HPUPrecision
from lightning_hpu.precision.lightning_habana_arguments import HPU_DEVICE, ConvertModulesHelpers, check_device
from lightning_hpu.precision.names import lookup


def split_fp8_precision(
    precision: str, fp8_recipe: Any | Mapping[str, Any] | None, fp8_layer_filter: LayerFilter | None
) -> tuple[str, HPUPrecision | None]:
    """The DeepSpeed precision to configure for ``precision``, and the fp8 side when it is an fp8 precision (a name
    DeepSpeed does not run is left to Lightning's ``DeepSpeedPrecision``, which refuses it in its words)."""
    meaning = lookup(precision)
    if meaning is not None and meaning.fp8 and meaning.deepspeed is not None:
        fp8 = HPUPrecision(meaning.name, fp8_recipe=fp8_recipe, fp8_layer_filter=fp8_layer_filter)
        return meaning.deepspeed, fp8
    if fp8_recipe is not None or fp8_layer_filter is not None:
        raise ValueError(f"`fp8_recipe` and `fp8_layer_filter` apply to precision='fp8' only, not {precision!r}.")
    return (meaning.name if meaning is not None else str(precision)), None


class FP8DeepSpeedPrecisionHooks(ConvertModulesHelpers):
    """The fp8 side of a DeepSpeed precision, written once for Fabric and the Trainer.

    Mix it in before Lightning's ``DeepSpeedPrecision`` (Fabric's or the Trainer's): the engine's layers are
    swapped in when the module is converted, and the forward runs under ``fp8_autocast``.
    """

    fp8: HPUPrecision | None
    precision: Any
    device: str

    def __init__(
        self,
        precision: str,
        device: str = HPU_DEVICE,
        *,
        fp8_recipe: Any | Mapping[str, Any] | None = None,
        fp8_layer_filter: LayerFilter | None = None,
    ) -> None:
        self.device = check_device(device)  # lightning-habana's argument and attribute
        # ``precision`` is what DeepSpeed's config is built from: bf16 (or fp16) outside the fp8 layers; ``fp8`` is
        # the fp8 side (engine, recipe, layer swap) when the precision is an fp8 one.
        name, self.fp8 = split_fp8_precision(precision, fp8_recipe, fp8_layer_filter)
        super().__init__(name)  # type: ignore[call-arg]

    def convert_module(self, module: Module) -> Module:
        if self.fp8 is not None:
            module = self.fp8.convert_module(module)
        return super().convert_module(module)  # type: ignore[misc]

    def forward_context(self) -> AbstractContextManager:
        return self.fp8.fp8_autocast() if self.fp8 is not None else super().forward_context()  # type: ignore[misc]

    @override
    def _fp8_side(self) -> HPUPrecision | None:
        return self.fp8


__all__ = ["FP8DeepSpeedPrecisionHooks", "split_fp8_precision"]
