"""The ``LIGHTNING_HPU_*`` variables are checked where the user meets them: a bad value never stops Lightning from
learning ``accelerator="hpu"`` (nor sends the user to reinstall), and ``Trainer``/``Fabric(accelerator="hpu")`` then
fails with one sentence naming the variable, its value and the values it takes, in both Lightning namespaces."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from lightning.fabric import Fabric
from lightning.pytorch import Trainer

from lightning_hpu import HPUConfigurationError
from lightning_hpu.runtime import reset_backend, settings
from lightning_hpu.runtime.recipe_cache import RECIPE_CACHE_CONFIG_ENV, RECIPE_CACHE_PATH_ENV
from tests.helpers.paths import ROOT


def _build(owner: str) -> Any:
    if owner == "Trainer":
        return Trainer(accelerator="hpu", devices=1, logger=False, enable_checkpointing=False)
    return Fabric(accelerator="hpu", devices=1)


@pytest.mark.parametrize("owner", ["Trainer", "Fabric"])
def test_a_backend_that_is_none_is_refused_where_the_hpu_is_asked_for(
    owner: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(settings.BACKEND_ENV, "bogus")
    reset_backend()
    with pytest.raises(HPUConfigurationError) as raised:
        _build(owner)
    assert str(raised.value).startswith("LIGHTNING_HPU_BACKEND='bogus' is not a backend: set it to 'cpu'")
    assert "'hpu' for a Gaudi" in str(raised.value)


@pytest.mark.parametrize("owner", ["Trainer", "Fabric"])
def test_a_recipe_cache_that_cannot_be_one_is_refused_naming_the_variable(
    owner: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    a_file = tmp_path / "recipes"
    a_file.write_text("not a directory")
    monkeypatch.setenv(RECIPE_CACHE_PATH_ENV, str(a_file))
    monkeypatch.delenv(RECIPE_CACHE_CONFIG_ENV, raising=False)
    reset_backend()
    with pytest.raises(HPUConfigurationError, match=rf"^LIGHTNING_HPU_RECIPE_CACHE='{a_file}' cannot hold the bridge"):
        _build(owner)
    assert RECIPE_CACHE_CONFIG_ENV not in os.environ


#: Lightning's three packages imported with bad lightning-hpu variables; what each says when asked for an HPU.
_BAD_VARIABLES = """
import json, warnings
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    import lightning as L
    import pytorch_lightning as pl
    import lightning_fabric
    cpu = type(L.Trainer(accelerator="cpu", logger=False, enable_checkpointing=False).accelerator).__name__
errors = {}
for name, build in {
    "lightning.Trainer": lambda: L.Trainer(accelerator="hpu", logger=False),
    "lightning.Fabric": lambda: L.Fabric(accelerator="hpu"),
    "pytorch_lightning.Trainer": lambda: pl.Trainer(accelerator="hpu", logger=False),
    "lightning_fabric.Fabric": lambda: lightning_fabric.Fabric(accelerator="hpu"),
}.items():
    try:
        build()
    except Exception as error:
        errors[name] = f"{type(error).__name__}: {error}"
ours = [str(w.message) for w in caught if "HPU" in str(w.message)]
print(json.dumps({"cpu": cpu, "errors": errors, "warnings": ours}))
"""


@pytest.mark.multiprocess
def test_bad_variables_leave_the_registration_alone_and_fail_where_the_hpu_is_asked_for(tmp_path: Path) -> None:
    """A real interpreter: the warning comes while Lightning is imported at start-up, with these variables set."""
    env = {name: value for name, value in os.environ.items() if not name.startswith(("LIGHTNING_HPU_", "PT_HPU_"))}
    env.update(
        LIGHTNING_HPU_BACKEND="bogus",
        LIGHTNING_HPU_AUTOLOAD="maybe",
        PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
    )
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_BAD_VARIABLES)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["cpu"] == "CPUAccelerator"  # a Trainer that asks for no HPU does not meet the variable
    assert seen["warnings"] == [
        "LIGHTNING_HPU_AUTOLOAD='maybe' is neither on nor off: lightning-hpu registers with Lightning as with"
        " LIGHTNING_HPU_AUTOLOAD=1; set it to 0 to turn registration off, or to 1."
    ]
    assert set(seen["errors"]) == {
        "lightning.Trainer",
        "lightning.Fabric",
        "pytorch_lightning.Trainer",
        "lightning_fabric.Fabric",
    }
    for owner, error in seen["errors"].items():
        assert error.startswith("HPUConfigurationError: LIGHTNING_HPU_BACKEND='bogus' is not a backend"), owner
