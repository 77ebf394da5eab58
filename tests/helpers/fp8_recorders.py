"""Recording stand-ins for the fp8 engines the package drives: the Gaudi Transformer Engine's interface computing
plain ``F.linear``, and Intel Neural Compressor's fp8 flow. They record how the package used them."""

from __future__ import annotations

import enum
import json
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import nn


def make_fake_engine() -> types.SimpleNamespace:
    """A ``te`` namespace whose Linear/fp8_autocast/DelayedScaling record how they were used."""
    log: dict[str, list[Any]] = {"linear_init": [], "autocast": []}
    state = {"fp8_active": False}

    class Format(enum.Enum):
        E4M3 = "e4m3"
        E5M2 = "e5m2"
        HYBRID = "hybrid"

    class DelayedScaling:
        def __init__(self, margin: int = 0, interval: int = 1, fp8_format: Format = Format.E5M2) -> None:
            self.margin, self.interval, self.fp8_format = margin, interval, fp8_format

    class Linear(nn.Module):
        def __init__(self, in_features: int, out_features: int, bias: bool = True, **kwargs: Any) -> None:
            super().__init__()
            log["linear_init"].append(dict(in_features=in_features, out_features=out_features, bias=bias, **kwargs))
            # Fresh weights, as the engine allocates (normal(0, 0.023)); conversion must not leave them in place.
            self.weight = nn.Parameter(torch.randn(out_features, in_features) * 0.023)
            self.bias = nn.Parameter(torch.zeros(out_features)) if bias else None
            self.fp8_calls = 0

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            self.fp8_calls += int(state["fp8_active"])
            return F.linear(x, self.weight, self.bias)

    @contextmanager
    def fp8_autocast(enabled: bool = False, fp8_recipe: Any = None, **kwargs: Any) -> Iterator[None]:
        log["autocast"].append({"enabled": enabled, "fp8_recipe": fp8_recipe, **kwargs})
        state["fp8_active"] = enabled
        try:
            yield
        finally:
            state["fp8_active"] = False

    recipe = types.SimpleNamespace(DelayedScaling=DelayedScaling, Format=Format)
    return types.SimpleNamespace(Linear=Linear, fp8_autocast=fp8_autocast, recipe=recipe, log=log, state=state)


def install_fake_inc(monkeypatch: pytest.MonkeyPatch) -> types.SimpleNamespace:
    """Intel Neural Compressor's fp8 flow (``FP8Config``, ``prepare``, ``convert``, ``finalize_calibration``) as
    modules in ``sys.modules`` that record each call: ``.calls`` holds ``(name, model, config)``."""
    calls: list[tuple[str, Any, Any]] = []

    class FP8Config:
        def __init__(self, mode: str = "AUTO", dump_stats_path: str = "./hqt_output/measure", **kwargs: Any) -> None:
            self.mode, self.dump_stats_path = mode, dump_stats_path

        @classmethod
        def from_json_file(cls, path: str) -> FP8Config:
            data = json.loads(Path(path).read_text())
            return cls(mode=data["mode"], dump_stats_path=data["dump_stats_path"])

        @property
        def measure(self) -> bool:
            return self.mode == "MEASURE"

        @property
        def quantize(self) -> bool:
            return self.mode == "QUANTIZE"

    def prepare(model: nn.Module, config: FP8Config) -> nn.Module:
        calls.append(("prepare", model, config))
        return model

    def convert(model: nn.Module, config: FP8Config) -> nn.Module:
        calls.append(("convert", model, config))
        return model

    def finalize_calibration(model: nn.Module) -> None:
        calls.append(("finalize_calibration", model, None))

    quantization = types.ModuleType("neural_compressor.torch.quantization")
    quantization.__dict__.update(
        FP8Config=FP8Config, prepare=prepare, convert=convert, finalize_calibration=finalize_calibration
    )
    monkeypatch.setitem(sys.modules, "neural_compressor", types.ModuleType("neural_compressor"))
    monkeypatch.setitem(sys.modules, "neural_compressor.torch", types.ModuleType("neural_compressor.torch"))
    monkeypatch.setitem(sys.modules, "neural_compressor.torch.quantization", quantization)
    return types.SimpleNamespace(calls=calls, FP8Config=FP8Config)
