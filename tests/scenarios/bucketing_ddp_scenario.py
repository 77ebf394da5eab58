"""Bucketed, length-grouped training on 2 stand-in HPUs under ``hpu_parallel``, for
``tests/lightning_hpu/data/test_buckets.py``.

Usage: ``python bucketing_ddp_scenario.py OUT_DIR`` (with ``LIGHTNING_HPU_CPU_DEVICES=2``), or ``main(OUT_DIR)`` from
``two_device_scenario.py``; every rank writes what its steps saw to ``OUT_DIR/rank<rank>.json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.helpers.bucketing_model import BucketedTokenModel
from tests.helpers.trainer import quiet_trainer

BUCKETS = [8, 16, 32]


def main(out: Path) -> None:
    model = BucketedTokenModel(BUCKETS, grouped=True)
    trainer = quiet_trainer(
        str(out), accelerator="hpu", devices=2, strategy="hpu_parallel", max_epochs=1, enable_checkpointing=False
    )
    trainer.fit(model)
    (out / f"rank{trainer.global_rank}.json").write_text(
        json.dumps({"seen": model.seen, "sampler": type(trainer.train_dataloader.batch_sampler).__name__})
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
