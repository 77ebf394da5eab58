"""Bucketed, length-grouped training on 2 stand-in HPUs under ``hpu_parallel``, for
``tests/lightning_hpu/data/test_buckets.py``.

Usage: ``python bucketing_ddp_scenario.py OUT_DIR`` (with ``LIGHTNING_HPU_CPU_DEVICES=2``), or ``main(OUT_DIR)`` from
``two_device_scenarios.py``; every rank writes what its steps saw to ``OUT_DIR/rank<rank>.json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from lightning.pytorch import Trainer

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.helpers.bucketing_model import BucketedTokenModel

BUCKETS = [8, 16, 32]


def main(out: Path) -> None:
    model = BucketedTokenModel(BUCKETS, grouped=True)
    trainer = Trainer(
        accelerator="hpu",
        devices=2,
        strategy="hpu_parallel",
        max_epochs=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=str(out),
    )
    trainer.fit(model)
    (out / f"rank{trainer.global_rank}.json").write_text(
        json.dumps({"seen": model.seen, "sampler": type(trainer.train_dataloader.batch_sampler).__name__})
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
