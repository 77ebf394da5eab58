"""The one table of precision names against Lightning: its names, its spellings, and what its plugins make of each."""

from __future__ import annotations

from typing import Any, get_args

import pytest
import torch
from lightning.fabric import Fabric
from lightning.fabric.connector import _PRECISION_INPUT_INT, _PRECISION_INPUT_STR
from lightning.fabric.plugins.precision.deepspeed import DeepSpeedPrecision
from lightning.fabric.plugins.precision.fsdp import FSDPPrecision
from lightning.fabric.plugins.precision.precision import _PRECISION_INPUT_STR_ALIAS_CONVERSION
from lightning.fabric.strategies import ModelParallelStrategy

from lightning_hpu.precision.hpu_precision import HPUPrecisionInput
from lightning_hpu.precision.names import ALIASES, PRECISIONS, hpu_names, hpu_only_names, lookup


def test_lightnings_names_and_spellings_are_the_tables() -> None:
    assert {name for name, meaning in PRECISIONS.items() if meaning.lightning} == set(get_args(_PRECISION_INPUT_STR))
    assert dict(_PRECISION_INPUT_STR_ALIAS_CONVERSION) == ALIASES
    for number in get_args(_PRECISION_INPUT_INT):
        assert lookup(number) is PRECISIONS[_PRECISION_INPUT_STR_ALIAS_CONVERSION[str(number)]]
    assert hpu_only_names() == ("fp8", "fp8-float16")
    assert "64-true" not in hpu_names() and "transformer-engine" in hpu_names()
    assert set(get_args(HPUPrecisionInput)) == set(hpu_names()), "the plugins' type hint lists the HPU's names"


@pytest.mark.parametrize("given", [None, True, "bf16_mixed", "fp16", 8, 1.5])
def test_what_is_no_name_means_nothing(given: Any) -> None:
    assert lookup(given) is None


def _refused_with_model_parallel(precision: str) -> bool:
    strategy = ModelParallelStrategy(lambda module, mesh: module)
    try:
        Fabric(accelerator="cpu", devices=1, strategy=strategy, precision=precision)  # type: ignore[arg-type]
    except ValueError as error:
        return "ModelParallelStrategy` does not support" in str(error)
    return False


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_model_parallel_runs_what_lightnings_connector_lets_it_run() -> None:
    for name, meaning in PRECISIONS.items():
        if not meaning.lightning:
            continue
        assert _refused_with_model_parallel(name) == (not meaning.model_parallel), name


def test_deepspeed_runs_each_names_deepspeed_precision_with_the_same_dtypes() -> None:
    for name, meaning in PRECISIONS.items():
        if meaning.deepspeed is None:
            with pytest.raises(ValueError):
                DeepSpeedPrecision(name)  # type: ignore[arg-type]
            continue
        plugin = DeepSpeedPrecision(meaning.deepspeed)  # type: ignore[arg-type]
        configured = PRECISIONS[meaning.deepspeed]
        assert (configured.weights, configured.compute, configured.fp8) == (meaning.weights, meaning.compute, False)
        assert plugin._desired_dtype == meaning.compute, name


@pytest.mark.filterwarnings("ignore::UserWarning")  # Lightning's fp16 scaler, made for CUDA
def test_fsdp_runs_lightnings_fsdp_names_but_fp8() -> None:
    for name, meaning in PRECISIONS.items():
        if not meaning.lightning:
            continue
        try:
            FSDPPrecision(name)  # type: ignore[arg-type]
        except ValueError:
            assert not meaning.fsdp, name
        else:
            assert meaning.fsdp == meaning.hpu, name


def test_mixed_true_and_fp8() -> None:
    assert PRECISIONS["bf16-mixed"].mixed and not PRECISIONS["bf16-true"].mixed
    assert PRECISIONS["fp8"].mixed and PRECISIONS["fp8"].fp8 and PRECISIONS["fp8"].weights == torch.float32
    engine = PRECISIONS["transformer-engine-float16"]
    assert engine.true_half and engine.fp8 and engine.fp16 and not engine.mixed
    assert [PRECISIONS[name].matmul_precision for name in ("32-true", "bf16-mixed", "16-true", "fp8")] == [
        "fp32",
        "bf16",
        "fp16",
        "fp8",
    ]
