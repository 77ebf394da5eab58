"""A compiled 2-rank ``hpu_parallel`` run with a recipe cache, for
``tests/lightning_hpu/runtime/test_recipe_cache_multiprocess.py``.

Usage: ``python recipe_cache_scenario.py OUT_DIR CACHE_DIR`` (with ``LIGHTNING_HPU_CPU_DEVICES=2``), or
``main(OUT_DIR)`` from ``two_device_scenario.py`` (the cache in ``OUT_DIR/recipes``); every rank writes the recipes
it compiled in this run to ``OUT_DIR/rank<rank>.json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from gaudi_standin.emulator import machine as standin_runtime
from lightning_hpu import HPUAccelerator, HPUCompile
from tests.helpers.dynamo import reset_dynamo
from tests.helpers.models import RegressionModel
from tests.helpers.trainer import quiet_trainer


def main(out: Path, cache: Path | None = None) -> None:
    reset_dynamo()  # compiles from scratch after other scenarios of the same process
    counters = standin_runtime.current().counters
    compiled_before = counters.compiled_recipes
    trainer = quiet_trainer(
        str(out),
        accelerator=HPUAccelerator(recipe_cache=cache or out / "recipes"),
        devices=2,
        strategy="hpu_parallel",
        max_epochs=1,
        limit_val_batches=0,
        callbacks=[HPUCompile(dynamic=False)],
        enable_checkpointing=False,
    )
    trainer.fit(RegressionModel())
    recipes = counters.compiled_recipes - compiled_before
    (out / f"rank{trainer.global_rank}.json").write_text(json.dumps({"recipes": recipes}))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
