"""Installed means invisible until asked for: a program that never asks for an HPU finds in Lightning's registries
only the ``hpu``/``hpu_*`` names the package adds, Lightning's own entries as Lightning made them, and Lightning's
errors, in ``lightning``, ``pytorch_lightning`` and ``lightning_fabric``; the names kept out of the registries
(``"model_parallel"``, ``"single_hpu"``) still mean the HPU strategy where an HPU is asked for.

The CPU program is ``tests/scenarios/registry_scenario.py``, run once with ``LIGHTNING_HPU_AUTOLOAD=0`` (plain
Lightning) and once with the switch on, without the stand-in, at the end of ``cpu_program_scenario.py`` (the same
start test_namespaces.py checks, in the real interpreter).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from lightning.fabric import Fabric
from lightning.fabric.strategies import STRATEGY_REGISTRY as FABRIC_STRATEGY_REGISTRY
from lightning.pytorch import Trainer
from lightning.pytorch.strategies import StrategyRegistry

from lightning_hpu import SingleHPUStrategy
from lightning_hpu.fabric.strategies import SingleHPUStrategy as FabricSingleHPUStrategy
from lightning_hpu.integration.strategy_names import HPU_ONLY_NAMES
from lightning_hpu.pytorch.strategies.model_parallel import HPUModelParallelStrategy
from tests.helpers.fresh_start import cpu_program, in_fresh_start_group

OURS = re.compile(r"hpu(_\w+)?")
#: Calls that name a name of ours (which plain Lightning does not know): the package's own error, one sentence.
NAMING_OURS = ("'hpu_single'",)
#: Calls that name what nobody registers but is close to an HPU name (or is an HPU precision): Lightning's class and
#: message first, the HPU sentence after it. Every other call must give what plain Lightning gives.
CLOSE_TO_OURS = ("'hpu_singel'", "'hpuu'", "'fp8'")
#: Lightning's lists of the registered names (in set order, which differs from one process to the next).
NAME_LIST = re.compile(r"(Available names are: )([\w, ]+)")


def _lightnings_names(outcome: list[Any]) -> list[Any]:
    """``outcome`` with the name lists of its message sorted, and the names of ours left out of them."""
    if len(outcome) < 2:
        return outcome

    def names(match: re.Match[str]) -> str:
        listed = [name for name in match[2].split(", ") if not OURS.fullmatch(name)]
        return match[1] + ", ".join(sorted(listed))

    return [outcome[0], NAME_LIST.sub(names, outcome[1])]


@pytest.fixture(scope="module")
def runs() -> dict[str, Any]:
    """The scenario's report with the switch off and on (a CPU program: none of the package's variables set), from
    the CPU program that test_namespaces.py starts in the real interpreter (``tests/helpers/fresh_start.py``): the
    same start, once for both."""
    return {"off": cpu_program("off")["registries"], "on": cpu_program("on")["registries"]}


@in_fresh_start_group
@pytest.mark.parametrize("namespace", ["lightning", "pytorch_lightning", "lightning_fabric"])
def test_a_cpu_program_finds_only_hpu_names_added_to_the_registries(runs: dict[str, Any], namespace: str) -> None:
    off, on = runs["off"][namespace]["registries"], runs["on"][namespace]["registries"]
    assert set(off) == set(on) and off
    for label, plain in off.items():
        added = set(on[label]) - set(plain)
        assert added and not any(OURS.fullmatch(name) for name in plain), f"{namespace} {label}: nothing registered"
        assert {name for name in added if not OURS.fullmatch(name)} == set(), f"{namespace} {label}: {sorted(added)}"
        assert {name: on[label].get(name) for name in plain} == plain, f"{namespace} {label}: Lightning's changed"


@in_fresh_start_group
@pytest.mark.parametrize("namespace", ["lightning", "pytorch_lightning", "lightning_fabric"])
def test_a_cpu_program_gets_lightnings_errors(runs: dict[str, Any], namespace: str) -> None:
    off, on = runs["off"][namespace]["calls"], runs["on"][namespace]["calls"]
    assert set(off) == set(on) and len(off) >= 14
    for call, plain in off.items():
        ours = _lightnings_names(on[call])
        plain = _lightnings_names(plain)
        if any(name in call for name in NAMING_OURS):
            assert len(ours) == 2 and "UserErrorRecord" in ours[0], f"{call}: {ours}"
        elif any(name in call for name in CLOSE_TO_OURS):  # Lightning's class and words first, the HPU sentence after
            assert len(plain) == 2 and plain[0][0] in ours[0], f"{call}: {ours} is no {plain[0][0]}"
            assert ours[1].startswith(plain[1]), f"{call}:\n  Lightning: {plain[1]}\n  with ours: {ours[1]}"
        else:
            assert ours == plain, f"{call}:\n  Lightning: {plain}\n  with ours: {ours}"
    owner, name = ("Fabric", "single_hpu") if namespace == "lightning_fabric" else ("Trainer", "model_parallel")
    assert f"invalid strategy name: `strategy={name!r}`" in on[f"{owner}(strategy={name!r})"][1]


def test_the_names_kept_out_of_the_registries_are_registered_nowhere() -> None:
    for registry in (StrategyRegistry, FABRIC_STRATEGY_REGISTRY):
        assert not set(HPU_ONLY_NAMES) & set(registry), "an HPU-only name is registered"
        assert {name for name in registry if "hpu" in name and not OURS.fullmatch(name)} == set()


@pytest.mark.usefixtures("standin")
def test_the_names_kept_out_still_mean_the_hpu_strategy_where_an_hpu_is_asked_for() -> None:
    quiet = {"logger": False, "enable_checkpointing": False, "enable_progress_bar": False}
    assert type(Trainer(accelerator="hpu", strategy="model_parallel", **quiet).strategy) is HPUModelParallelStrategy
    assert type(Trainer(strategy="MODEL_PARALLEL", **quiet).strategy) is HPUModelParallelStrategy  # auto: the HPU
    assert type(Trainer(accelerator="hpu", strategy="single_hpu", **quiet).strategy) is SingleHPUStrategy
    assert type(Fabric(accelerator="hpu", strategy="single_hpu").strategy) is FabricSingleHPUStrategy
    assert type(Fabric(strategy="single_hpu").strategy) is FabricSingleHPUStrategy
    with pytest.raises(ValueError, match=r"^You selected an invalid strategy name: `strategy='model_parallel'`"):
        Trainer(accelerator="cpu", strategy="model_parallel", **quiet)
