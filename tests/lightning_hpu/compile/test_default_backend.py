"""torch.compile's default backend on HPU: Fabric and the Trainer compile with hpu_backend instead of Inductor (said
once); a backend the HPU cannot run, and Inductor's own settings, are refused with one sentence naming hpu_backend."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import torch
from lightning.fabric import Fabric
from torch import nn

from lightning_hpu import HPUConfigurationError
from lightning_hpu.compile import default_backend
from tests.helpers.dynamo import reset_dynamo
from tests.helpers.models import BlockModel
from tests.helpers.standin import counters as standin_counters
from tests.helpers.trainer import quiet_trainer, rank_zero_lines

TOLD = (
    "torch.compile's default backend (Inductor) does not run on HPUs: {} compiles with backend='hpu_backend' instead."
)


@pytest.fixture(autouse=True)
def lines(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """A fresh Dynamo and "said once" flag; the lines logged through Lightning's rank-zero logger."""
    reset_dynamo()
    monkeypatch.setattr(default_backend, "_told", False)
    with rank_zero_lines() as lines:
        yield lines


def _fabric_step(fabric: Fabric, module: nn.Module) -> None:
    loss = module(torch.ones(3, 4, device=fabric.device)).sum()
    fabric.backward(loss)


@pytest.mark.parametrize("method", ["setup", "setup_module"])
def test_fabric_recompiles_a_default_compiled_module_with_hpu_backend(
    method: str, standin: Any, lines: list[str]
) -> None:
    fabric = Fabric(accelerator="hpu", devices=1)
    compiled = torch.compile(nn.Linear(4, 2))  # as LitGPT does before fabric.setup: torch's default backend
    before = standin_counters().compiled_graphs
    module = getattr(fabric, method)(compiled)
    assert module._forward_module._compile_kwargs == {"backend": "hpu_backend"}
    _fabric_step(fabric, module)
    assert standin_counters().compiled_graphs > before  # the stand-in's hpu_backend compiled the graphs
    getattr(fabric, method)(torch.compile(nn.Linear(4, 2)))
    assert lines.count(TOLD.format("Fabric")) == 1, lines


def test_fabric_keeps_the_users_other_arguments_and_backends_the_hpu_runs(standin: Any) -> None:
    fabric = Fabric(accelerator="hpu", devices=1)
    module = fabric.setup(torch.compile(nn.Linear(4, 2), dynamic=False, fullgraph=True))
    assert module._forward_module._compile_kwargs == {"dynamic": False, "fullgraph": True, "backend": "hpu_backend"}
    _fabric_step(fabric, module)
    compiled = torch.compile(nn.Linear(4, 2), backend="hpu_backend", options={"keep_input_mutations": True})
    assert fabric.setup(compiled)._forward_module._compile_kwargs == {
        "backend": "hpu_backend",
        "options": {"keep_input_mutations": True},
    }
    for backend in ("eager", "hpu_backend"):  # backends the HPU runs are kept as given
        assert fabric.setup(torch.compile(nn.Linear(4, 2), backend=backend))._forward_module._compile_kwargs == {
            "backend": backend
        }


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"backend": "inductor"},
            r"^`torch.compile\(backend='inductor'\)` cannot run on an HPU: use backend='hpu_backend'",
        ),
        ({"backend": "cudagraphs"}, r"^`torch.compile\(backend='cudagraphs'\)` cannot run on an HPU: use backend='hpu"),
        ({"mode": "max-autotune"}, r"^`torch.compile\(mode='max-autotune'\)` is a mode of Inductor.*'hpu_backend'"),
        (
            {"options": {"triton.cudagraphs": True}},
            r"^`torch.compile\(options=...\)` sets Inductor's triton.*'hpu_backend'",
        ),
    ],
)
@pytest.mark.parametrize("owner", ["Trainer", "Fabric"])
def test_what_the_hpu_cannot_compile_is_refused_naming_hpu_backend(
    owner: str, kwargs: dict[str, Any], message: str, standin: Any, tmp_path: Any
) -> None:
    if owner == "Fabric":
        fabric = Fabric(accelerator="hpu", devices=1)
        with pytest.raises(HPUConfigurationError, match=message):
            fabric.setup(torch.compile(nn.Linear(4, 2), **kwargs))
        return
    trainer = quiet_trainer(tmp_path, accelerator="hpu", max_steps=1, enable_checkpointing=False)
    with pytest.raises(HPUConfigurationError, match=message):
        trainer.fit(torch.compile(BlockModel(log=False), **kwargs))
    assert trainer.global_step == 0 and standin_counters().compiled_graphs == 0  # refused before any step


def test_the_trainer_fits_a_default_compiled_model_with_hpu_backend(
    standin: Any, tmp_path: Any, lines: list[str]
) -> None:
    model = BlockModel(log=False)
    trainer = quiet_trainer(tmp_path, accelerator="hpu", max_steps=2, enable_checkpointing=False)
    before = standin_counters().compiled_graphs
    trainer.fit(torch.compile(model, dynamic=False))
    assert trainer.global_step == 2
    assert standin_counters().compiled_graphs > before
    assert model._compiler_ctx[default_backend.COMPILE_KWARGS_KEY] == {"dynamic": False, "backend": "hpu_backend"}
    again = quiet_trainer(tmp_path, accelerator="hpu", max_steps=1, enable_checkpointing=False)
    again.fit(model)  # the module as the first fit left it: compiled for HPU already, so not compiled again
    assert again.global_step == 1
    assert lines.count(TOLD.format("Trainer")) == 1, lines


def test_without_an_hpu_the_arguments_stay_the_users() -> None:
    fabric = Fabric(accelerator="cpu", devices=1)
    assert fabric.setup(torch.compile(nn.Linear(4, 2)))._forward_module._compile_kwargs == {}
