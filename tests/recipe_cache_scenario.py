"""A compiled 2-rank ``hpu_parallel`` run with a recipe cache, for ``tests/test_recipe_cache.py``.

Usage: ``python recipe_cache_scenario.py OUT_DIR CACHE_DIR`` (with ``LIGHTNING_HPU_CPU_DEVICES=2``); every rank
writes the recipes it compiled to ``OUT_DIR/rank<rank>.json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from lightning.pytorch import Trainer

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from lightning_hpu import HPUAccelerator, HPUCompile, get_backend
from tests.helpers import RegressionModel

if __name__ == "__main__":
    out, cache = Path(sys.argv[1]), Path(sys.argv[2])
    trainer = Trainer(
        accelerator=HPUAccelerator(recipe_cache=cache),
        devices=2,
        strategy="hpu_parallel",
        max_epochs=1,
        limit_val_batches=0,
        callbacks=[HPUCompile(dynamic=False)],
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=str(out),
    )
    trainer.fit(RegressionModel())
    counters = get_backend().counters  # type: ignore[union-attr]
    (out / f"rank{trainer.global_rank}.json").write_text(json.dumps({"recipes": counters.compiled_recipes}))
