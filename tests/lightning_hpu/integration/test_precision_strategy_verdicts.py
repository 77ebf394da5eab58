"""On the HPU, the Trainer and Fabric agree, and agree with Lightning, on every pair of precision and strategy.

Every strategy family that runs on HPUs (by name and as Lightning's own object) is built with every precision, for the
Trainer and for Fabric, with ``accelerator="hpu"``; the verdict (built, or refused) is compared with plain Lightning's
on the CPU. Lightning's FSDP runs on CUDA only, so for it Lightning's verdict is its FSDP precision plugin's (the check
it makes on a GPU). What differs is the device's, and said here: the HPU has no fp64 (``"64-true"`` is refused
everywhere), and the fp8 names (Lightning's ``"transformer-engine"`` ones are the HPU's fp8) are the HPU's own, on
which the Trainer and Fabric must still agree. Where Lightning refuses, the HPU's message starts with Lightning's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, get_args

import pytest
import torch
from lightning.fabric import Fabric
from lightning.fabric import strategies as fabric_strategies
from lightning.fabric.connector import _PRECISION_INPUT_STR
from lightning.fabric.plugins.precision.fsdp import FSDPPrecision as FabricFSDPPrecision
from lightning.pytorch import Trainer
from lightning.pytorch import strategies as trainer_strategies
from lightning.pytorch.plugins.precision.fsdp import FSDPPrecision

#: Lightning's precision names that mean the same on both devices.
LIGHTNING_PRECISIONS = [name for name in get_args(_PRECISION_INPUT_STR) if not name.startswith("transformer-engine")]
#: The HPU's fp8 names, Lightning's "transformer-engine" ones among them.
FP8_PRECISIONS = ["fp8", "fp8-float16", "transformer-engine", "transformer-engine-float16"]


def _parallelize(module: torch.nn.Module, mesh: Any) -> torch.nn.Module:
    return module


#: Per strategy family: how the Trainer and Fabric are given it.
FAMILIES: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {
    "auto": (lambda: "auto", lambda: "auto"),
    "ddp": (lambda: "ddp", lambda: "ddp"),
    "ddp_spawn": (lambda: "ddp_spawn", lambda: "ddp_spawn"),
    "deepspeed_stage_2": (lambda: "deepspeed_stage_2", lambda: "deepspeed_stage_2"),
    "fsdp": (lambda: "fsdp", lambda: "fsdp"),
    "DDPStrategy()": (trainer_strategies.DDPStrategy, fabric_strategies.DDPStrategy),
    "DeepSpeedStrategy()": (trainer_strategies.DeepSpeedStrategy, fabric_strategies.DeepSpeedStrategy),
    "FSDPStrategy()": (trainer_strategies.FSDPStrategy, fabric_strategies.FSDPStrategy),
    "ModelParallelStrategy()": (
        trainer_strategies.ModelParallelStrategy,
        lambda: fabric_strategies.ModelParallelStrategy(_parallelize),
    ),
}
OWNERS = ("Trainer", "Fabric")


def _verdict(make: Callable[[], object]) -> str | None:
    """``None`` when built, else the refusal's message on one line."""
    try:
        make()
    except Exception as error:
        return " ".join(str(error).split())
    return None


def _build(owner: str, family: str, accelerator: str, precision: str) -> Callable[[], object]:
    strategy = FAMILIES[family][OWNERS.index(owner)]

    def build() -> object:
        if owner == "Trainer":
            return Trainer(
                accelerator=accelerator,
                devices=1,
                strategy=strategy(),
                precision=precision,
                logger=False,  # type: ignore[arg-type]
            )
        return Fabric(accelerator=accelerator, devices=1, strategy=strategy(), precision=precision)  # type: ignore[arg-type]

    return build


def _lightnings(owner: str, family: str, precision: str) -> str | None:
    """Plain Lightning's verdict on the CPU; for FSDP (CUDA only), its FSDP precision plugin's."""
    if "fsdp" in family.lower():
        plugin = FSDPPrecision if owner == "Trainer" else FabricFSDPPrecision
        return _verdict(lambda: plugin(precision))  # type: ignore[arg-type]
    return _verdict(_build(owner, family, "cpu", precision))


@pytest.mark.parametrize("family", list(FAMILIES))
def test_the_hpu_refuses_what_lightning_refuses_in_its_words_and_trainer_and_fabric_agree(
    family: str, standin: object
) -> None:
    hpu = {
        (owner, precision): _verdict(_build(owner, family, "hpu", precision))
        for owner in OWNERS
        for precision in [*LIGHTNING_PRECISIONS, *FP8_PRECISIONS]
    }
    for precision in [*LIGHTNING_PRECISIONS, *FP8_PRECISIONS]:
        trainer, fabric = hpu["Trainer", precision], hpu["Fabric", precision]
        assert (trainer is None) == (fabric is None), f"{family}, {precision}: Trainer {trainer!r}, Fabric {fabric!r}"
    for owner in OWNERS:
        for precision in LIGHTNING_PRECISIONS:
            ours, lightning = hpu[owner, precision], _lightnings(owner, family, precision)
            where = f"{owner}(strategy={family}, precision={precision!r})"
            if lightning is not None:
                assert ours is not None and ours.startswith(lightning), (
                    f"{where}: Lightning {lightning!r}, ours {ours!r}"
                )
            else:
                assert (ours is None) == (precision != "64-true"), f"{where}: Lightning builds it, ours {ours!r}"
