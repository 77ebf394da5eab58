"""Recipes kept across runs: ``RecipeCache`` / ``HPUAccelerator(recipe_cache=...)`` and the stand-in's model of it.

Each "run" below starts from a fresh backend and a reset TorchDynamo, as a new process would.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from gaudi_standin.emulator import machine as standin_runtime
from gaudi_standin.emulator.recipe_store import active_store
from lightning_hpu import HPUAccelerator, HPUCompile, HPURecompileMonitor, RecipeCache
from lightning_hpu.runtime import get_backend
from lightning_hpu.runtime.recipe_cache import (
    RECIPE_CACHE_CONFIG_ENV,
    RECIPE_CACHE_PATH_ENV,
    apply_recipe_cache_from_env,
    filesystem_type,
)
from tests.helpers.dynamo import reset_dynamo
from tests.helpers.models import RegressionModel
from tests.helpers.standin import reset_backend
from tests.helpers.trainer import quiet_trainer


@pytest.fixture(autouse=True)
def _no_recipe_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """No cache before the test, and none after it: the variables the test sets are removed again."""
    for name in (RECIPE_CACHE_CONFIG_ENV, RECIPE_CACHE_PATH_ENV, "LOCAL_RANK"):
        monkeypatch.setenv(name, "")  # recorded, so monkeypatch restores the variable's absence at teardown
        monkeypatch.delenv(name)


class Wide(RegressionModel):
    def __init__(self, features: int = 8) -> None:
        super().__init__(features=features)

    def train_dataloader(self) -> Any:
        from torch.utils.data import DataLoader

        from tests.helpers.models import regression_data

        # 20 samples in batches of 8: two shapes (8 and 4 rows).
        return DataLoader(regression_data(samples=20, features=self.layer.in_features), batch_size=8)


def _run(tmp_path: Path, cache: Path, model: RegressionModel, compile: bool) -> tuple[int, int]:
    """One run on a fresh backend: (device compilations counted by the stand-in, the monitor's total)."""
    reset_backend()
    reset_dynamo()
    monitor = HPURecompileMonitor(warmup_steps=100)
    callbacks: list[Any] = [monitor] + ([HPUCompile(dynamic=False)] if compile else [])
    trainer = quiet_trainer(
        tmp_path,
        accelerator=HPUAccelerator(recipe_cache=cache),
        max_epochs=1,
        limit_val_batches=0,
        enable_checkpointing=False,
        callbacks=callbacks,
    )
    trainer.fit(model)
    counters = standin_runtime.current().counters
    compiled = counters.lazy_graph_compilations if get_backend().is_lazy() else counters.compiled_recipes  # type: ignore[union-attr]
    return compiled, monitor.total


def test_compiled_recipes_are_loaded_by_a_second_run(standin: Any, tmp_path: Path) -> None:
    cache = tmp_path / "recipes"
    first, _ = _run(tmp_path, cache, Wide(), compile=True)
    assert first > 0
    assert os.environ[RECIPE_CACHE_CONFIG_ENV] == f"{cache},false,1024"
    second, _ = _run(tmp_path, cache, Wide(), compile=True)
    assert second == 0
    assert active_store() is not None and active_store().hits == first  # type: ignore[union-attr]
    changed, _ = _run(tmp_path, cache, Wide(features=6), compile=True)
    assert changed == first  # another model: other graphs, all compiled again


def test_lazy_graphs_are_loaded_by_a_second_run(lazy_standin: Any, tmp_path: Path) -> None:
    cache = tmp_path / "recipes"
    first, monitored = _run(tmp_path, cache, Wide(), compile=False)
    assert first > 0 and monitored > 0
    second, monitored = _run(tmp_path, cache, Wide(), compile=False)
    assert second == 0 and monitored == 0
    changed, monitored = _run(tmp_path, cache, Wide(features=6), compile=False)
    assert changed > 0 and monitored > 0


def test_without_a_cache_every_run_compiles(standin: Any, tmp_path: Path) -> None:
    reset_backend()
    first = _run_without_cache(tmp_path)
    assert first > 0 and _run_without_cache(tmp_path) == first


def _run_without_cache(tmp_path: Path) -> int:
    reset_backend()
    reset_dynamo()
    trainer = quiet_trainer(
        tmp_path,
        accelerator="hpu",
        max_epochs=1,
        limit_val_batches=0,
        enable_checkpointing=False,
        callbacks=[HPUCompile(dynamic=False)],
    )
    trainer.fit(Wide())
    return standin_runtime.current().counters.compiled_recipes  # type: ignore[union-attr]


def test_delete_at_start_empties_the_cache_on_local_rank_zero_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "recipes"
    cache.mkdir()
    (cache / "old.recipe").write_text("x")
    monkeypatch.setenv("LOCAL_RANK", "1")
    RecipeCache(cache, delete_at_start=True).apply()
    assert (cache / "old.recipe").exists()
    monkeypatch.setenv("LOCAL_RANK", "0")
    RecipeCache(cache, delete_at_start=True, size_mb=64).apply()
    assert cache.is_dir() and not list(cache.iterdir())
    assert os.environ[RECIPE_CACHE_CONFIG_ENV] == f"{cache},false,64"  # the bridge itself never deletes


def test_network_file_system_flag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("lightning_hpu.runtime.recipe_cache.filesystem_type", lambda path: "nfs4")
    assert RecipeCache(tmp_path).config_value() == f"{tmp_path},false,1024,true"
    assert filesystem_type("/") is not None


def test_environment_route(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(RECIPE_CACHE_PATH_ENV, str(tmp_path / "env"))
    apply_recipe_cache_from_env()
    assert os.environ[RECIPE_CACHE_CONFIG_ENV] == f"{tmp_path / 'env'},false,1024"
    monkeypatch.setenv(RECIPE_CACHE_CONFIG_ENV, "/elsewhere,false,8")
    apply_recipe_cache_from_env()  # a value set by the user wins
    assert os.environ[RECIPE_CACHE_CONFIG_ENV] == "/elsewhere,false,8"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"size_mb": 0}, "`size_mb` must be a positive number"),
        ({"path": "/a,b"}, "holds a comma"),
        ({"path": ""}, "`path` must name a directory"),
    ],
)
def test_bad_recipe_cache_arguments(tmp_path: Path, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RecipeCache(**{"path": tmp_path, **kwargs})


def test_the_store_evicts_beyond_its_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(RECIPE_CACHE_CONFIG_ENV, f"{tmp_path},false,1")
    store = active_store()
    assert store is not None
    for index in range(3):
        store.store(f"k{index}", "x" * 600_000)
    assert len(list(tmp_path.glob("*.recipe"))) == 1
    assert store.load("k2") and not store.load("k0")
