"""What a lightning-habana user's code passes that this package spells differently, accepted with the same meaning.

lightning-habana's precision plugins took ``device="hpu"`` (the only device they ran on) and converted fp8 models
with ``plugin.convert_modules(module, inference=False, replace_layers=False, recipe=None, quant=True,
fp8_data_path=None)``. Both are accepted here (docs/guide/coming-from-lightning-habana.md): any other device is refused,
and ``convert_modules`` maps onto this package's fp8 training (layer swap, recipe) and INC inference paths.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from types import ModuleType
from typing import Any, Protocol

from torch import nn


class FP8Precision(Protocol):
    """What :meth:`ConvertModulesHelpers.convert_modules` uses of the plugin running fp8 (an ``HPUPrecision``)."""

    precision: Any
    fp8_recipe: Any
    fp8_replace_layers: bool

    @property
    def is_fp8(self) -> bool: ...

    @staticmethod
    def _engine() -> ModuleType: ...

    def convert_module(self, module: nn.Module) -> nn.Module: ...


#: The device lightning-habana's plugins accepted (and the only one they ran on).
HPU_DEVICE = "hpu"


def check_device(device: Any) -> str:
    """Accept lightning-habana's ``device="hpu"`` (returned, for the plugin's ``device`` attribute, as there); refuse
    any other device in one sentence."""
    if str(device) != HPU_DEVICE:
        raise ValueError(
            f"`device={device!r}`: HPU precision plugins run on the HPU only; pass device='hpu' or leave it out."
        )
    return HPU_DEVICE


def inc_available() -> bool:
    """Whether Intel Neural Compressor's fp8 API imports (what fp8 inference needs)."""
    from lightning_hpu.fp8.inference import quantization_api
    from lightning_hpu.runtime import HPUFeatureUnavailableError

    try:
        quantization_api()
    except HPUFeatureUnavailableError:
        return False
    return True


class ConvertModulesHelpers:
    """lightning-habana's ``plugin.convert_modules(module, ...)``, one method for every HPU precision plugin that can
    run fp8: :class:`~lightning_hpu.HPUPrecision` itself, and the DeepSpeed plugins, whose fp8 side is one."""

    precision: Any

    def _fp8_side(self) -> FP8Precision | None:
        """The plugin that runs this one's fp8 layers, or ``None`` when this plugin's precision is not fp8."""
        raise NotImplementedError

    def convert_modules(
        self,
        module: nn.Module,
        inference: bool = False,
        replace_layers: bool = False,
        recipe: Any | Mapping[str, Any] | None = None,
        quant: bool | str | Mapping[str, Any] | None = True,
        fp8_data_path: str | None = None,
    ) -> nn.Module:
        """lightning-habana's fp8 conversion, for code that calls it; fp8 only. Not needed otherwise: with
        ``precision="fp8"`` the Trainer and Fabric convert the model themselves.

        Training (``inference=False``): ``recipe`` becomes the plugin's fp8 recipe; ``replace_layers=True`` swaps the
        ``nn.Linear`` layers for the engine's now (keeping their weights, which lightning-habana did not), and
        ``replace_layers=False`` leaves every ``nn.Linear`` as it is (only layers that already are the engine's run
        in fp8), as in lightning-habana. Inference: ``quant=False`` prepares INC's measurement, ``quant=True``
        converts with the measured statistics (the packaged maxabs configs), a path or dict is an INC config of either
        mode; ``fp8_data_path`` sets where the statistics go (``<fp8_data_path>/inc_output/measure``, as
        lightning-habana).
        """
        fp8 = self._fp8_side()
        if fp8 is None:
            raise ValueError(
                f"convert_modules() applies to precision='fp8' only, but this plugin's precision is {self.precision!r}."
            )
        if inference:
            return _convert_for_inference(module, quant, fp8_data_path)
        if recipe is not None:
            from lightning_hpu.fp8.engine import make_recipe

            fp8.fp8_recipe = make_recipe(fp8._engine(), recipe)
        fp8.fp8_replace_layers = replace_layers
        return fp8.convert_module(module) if replace_layers else module


def _convert_for_inference(module: nn.Module, quant: Any, fp8_data_path: str | None) -> nn.Module:
    from lightning_hpu.fp8.inference import default_config, fp8_measure, fp8_quantize, quantization_api

    if isinstance(quant, bool):
        config: Any = quantization_api().FP8Config.from_json_file(
            str(default_config("quantize" if quant else "measure"))
        )
    elif isinstance(quant, Mapping):
        config = quantization_api().FP8Config.from_dict(dict(quant))
    elif isinstance(quant, (str, os.PathLike)):
        if not os.path.isfile(quant):
            raise FileNotFoundError(f"`quant={str(quant)!r}` is not a file; pass the path of an INC fp8 JSON config.")
        config = quantization_api().FP8Config.from_json_file(str(quant))
    else:
        raise TypeError(
            f"`quant` must be either a bool, file path or a dictionary (True: quantize, False: measure, or an INC"
            f" config), got {type(quant).__name__}."
        )
    data_path = fp8_data_path if fp8_data_path is not None else os.environ.get("HABANA_LOGS")
    if data_path is not None:
        config.dump_stats_path = os.path.join(data_path, "inc_output", "measure")
    return fp8_measure(module, config) if config.measure else fp8_quantize(module, config)
