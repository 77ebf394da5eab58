"""fp8 inference with Intel Neural Compressor (INC): measure, then quantize.

The flow takes two runs. First :func:`fp8_measure` prepares the model with a config whose ``mode`` is
``"MEASURE"``; run calibration data through it and call :func:`fp8_finish_measurement` to write the statistics.
Then, in a later run, :func:`fp8_quantize` converts the model with a config whose ``mode`` is ``"QUANTIZE"`` (and
the same ``dump_stats_path``). Configs are INC's JSON files (or ``FP8Config`` objects). INC's fp8 kernels need a
Gaudi2 or later; this module is the only one that imports ``neural_compressor``.
"""

from __future__ import annotations

import importlib
from importlib import resources
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from torch import nn

from lightning_hpu.device.generation_rules import check_fp8_supported
from lightning_hpu.runtime import HPUFeatureUnavailableError

Fp8InferenceMode = Literal["measure", "quantize"]

#: The packaged INC config of each mode.
DEFAULT_CONFIGS: dict[str, str] = {"measure": "maxabs_measure.json", "quantize": "maxabs_quant.json"}


def default_config(mode: Fp8InferenceMode) -> Path:
    """The path of the packaged maxabs INC config for ``mode``."""
    return Path(str(resources.files("lightning_hpu.fp8") / "configs" / DEFAULT_CONFIGS[mode]))


_INC_MODULE = "neural_compressor.torch.quantization"


def quantization_api() -> ModuleType:
    """INC's ``neural_compressor.torch.quantization`` module, or an error saying how to install it."""
    try:
        return importlib.import_module(_INC_MODULE)
    except ImportError as err:
        raise HPUFeatureUnavailableError(
            f"fp8 inference needs Intel Neural Compressor ({_INC_MODULE}), which failed to import ({err});"
            " install it on your Gaudi machine with `pip install neural-compressor-pt`."
        ) from None


def load_fp8_config(config: str | Path | Any, expected_mode: str) -> Any:
    """An INC ``FP8Config`` from a JSON file path (or as given), checked to be in ``expected_mode``."""
    api = quantization_api()
    if isinstance(config, (str, Path)):
        path = Path(config)
        if not path.is_file():
            raise FileNotFoundError(f"`config={str(config)!r}` is not a file; pass the path of an INC fp8 JSON config.")
        config = api.FP8Config.from_json_file(str(path))
    elif not isinstance(config, api.FP8Config):
        raise TypeError(
            f"`config` must be the path of an INC JSON config or an FP8Config, got {type(config).__name__}."
        )
    if not getattr(config, expected_mode.lower()):
        raise ValueError(
            f'`config` is not a {expected_mode} config; set "mode": "{expected_mode}" in it for this step.'
        )
    return config


def fp8_measure(model: nn.Module, config: str | Path | Any) -> nn.Module:
    """Prepare ``model`` to record the statistics fp8 quantization needs (config ``mode``: ``"MEASURE"``)."""
    check_fp8_supported()
    cfg = load_fp8_config(config, "MEASURE")
    return quantization_api().prepare(model, cfg)


def fp8_finish_measurement(model: nn.Module) -> None:
    """Write the statistics recorded since :func:`fp8_measure` to the config's ``dump_stats_path``."""
    quantization_api().finalize_calibration(model)


def fp8_quantize(model: nn.Module, config: str | Path | Any) -> nn.Module:
    """Convert ``model`` to fp8 with the measured statistics (config ``mode``: ``"QUANTIZE"``)."""
    check_fp8_supported()
    cfg = load_fp8_config(config, "QUANTIZE")
    return quantization_api().convert(model, cfg)
