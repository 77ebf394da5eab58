"""Every precision name Lightning and the HPU both take creates and keeps the weights in the dtype plain Lightning does.

The reference is Lightning's own ``tests_pytorch/plugins/precision/test_transformer_engine.py::test_configure_model``:
with ``precision="transformer-engine-float16"`` the layers ``configure_model`` creates are fp16, and stay fp16 after
the run. Plain Lightning runs on the CPU here; its Transformer Engine plugin with a stand-in ``transformer_engine``
module (as Lightning's test does: NVIDIA's engine needs a GPU), the HPU with the stand-in's own emulated engine. Each
run records the weights' dtype in ``configure_model`` (Fabric: ``init_module``), in the step, and after it.
"""

from __future__ import annotations

import sys
from contextlib import nullcontext
from typing import Any
from unittest.mock import Mock

import lightning.fabric
import pytest
import torch
from lightning.fabric import Fabric
from lightning.pytorch import LightningModule, Trainer

from lightning_hpu.precision.names import ALIASES, PRECISIONS, lookup

#: The names (and Lightning's spellings of them) that Lightning's connector and the HPU both take.
BOTH = [
    *(name for name, meaning in PRECISIONS.items() if meaning.lightning and meaning.hpu),
    *(alias for alias, name in ALIASES.items() if PRECISIONS[name].hpu),
]


class _EngineLinear(torch.nn.Linear):
    """What Lightning's plugin swaps ``nn.Linear`` for, as the reference test's stand-in engine has it."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *_: Any, **__: Any) -> None:
        super().__init__(in_features, out_features, bias)


class _EngineLayerNorm(torch.nn.LayerNorm):
    def __init__(self, normalized_shape: int, eps: float = 1e-5, *_: Any, **__: Any) -> None:
        super().__init__(normalized_shape, eps)


@pytest.fixture
def lightning_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lightning's ``TransformerEnginePrecision`` made to run on the CPU, as its own test runs it."""
    module = lightning.fabric.plugins.precision.transformer_engine
    if module._TRANSFORMER_ENGINE_AVAILABLE:
        pytest.skip("NVIDIA's Transformer Engine is installed: this compares against its stand-in")
    monkeypatch.setattr(module, "_TRANSFORMER_ENGINE_AVAILABLE", lambda: True)
    engine = Mock()
    engine.pytorch.fp8_autocast.return_value = nullcontext()
    engine.pytorch.Linear = _EngineLinear
    engine.pytorch.LayerNorm = _EngineLayerNorm
    for name in ("transformer_engine", "transformer_engine.pytorch", "transformer_engine.common.recipe"):
        monkeypatch.setitem(sys.modules, name, engine)


class _Recorder(LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.dtypes: dict[str, torch.dtype] = {}

    def configure_model(self) -> None:
        self.layer = torch.nn.Linear(16, 16)  # sizes the engines take (multiples of 8 and 16)
        self.dtypes["configure_model"] = self.layer.weight.dtype

    def test_step(self, batch: Any, batch_idx: int) -> None:
        self.dtypes["step"] = self.layer.weight.dtype


def _trainer_dtypes(accelerator: str, precision: Any) -> dict[str, torch.dtype]:
    model = _Recorder()
    trainer = Trainer(accelerator=accelerator, devices=1, precision=precision, barebones=True)
    trainer.test(model, [torch.zeros(1, 16)])
    return {**model.dtypes, "after": model.layer.weight.dtype}


def _fabric_dtypes(accelerator: str, precision: Any) -> dict[str, torch.dtype]:
    fabric = Fabric(accelerator=accelerator, devices=1, precision=precision)
    with fabric.init_module():
        model = torch.nn.Sequential(torch.nn.Linear(16, 16))
    created = model[0].weight.dtype
    model = fabric.setup(model)
    return {"configure_model": created, "after": model.module[0].weight.dtype}


@pytest.mark.filterwarnings("ignore::UserWarning")  # Lightning's CPU notes (fp16 AMP, autocast on "cuda")
@pytest.mark.parametrize("owner", ["Trainer", "Fabric"])
@pytest.mark.parametrize("precision", BOTH)
def test_the_weights_have_lightnings_dtype_from_configure_model_on(
    owner: str, precision: str, lightning_engine: None, standin: Any
) -> None:
    run = _trainer_dtypes if owner == "Trainer" else _fabric_dtypes
    lightning = run("cpu", precision)
    hpu = run("hpu", precision)
    assert hpu == lightning, f"{owner}(precision={precision!r}): Lightning {lightning}, HPU {hpu}"
    meaning = lookup(precision)
    assert meaning is not None and set(hpu.values()) == {meaning.weights}, "the names table says otherwise"


def test_lightnings_transformer_engine_names_keep_bf16_and_fp16_weights() -> None:
    assert {"transformer-engine", "transformer-engine-float16"} <= set(BOTH)
    assert PRECISIONS["transformer-engine"].weights == torch.bfloat16
    assert PRECISIONS["transformer-engine-float16"].weights == torch.float16
