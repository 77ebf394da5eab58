"""Saves two large checkpoints in the background, for the kill test of
``tests/lightning_hpu/pytorch/plugins/test_async_checkpoint_io.py``.

Usage: ``python async_save_scenario.py PATH``. The first save (every value 1.0) is waited for and announced by
``PATH.first-done``, which holds the process's pid (the test kills it by that pid); the second (every value 2.0)
is queued, the training thread overwrites the tensor with 3.0 at once and then sleeps, so a kill lands while the
background thread writes.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import torch

from lightning_hpu import HPUAsyncCheckpointIO

ELEMENTS = 64 * 2**20  # 256 MB of float32

if __name__ == "__main__":
    path = Path(sys.argv[1])
    io = HPUAsyncCheckpointIO()
    weights = torch.ones(ELEMENTS)
    io.save_checkpoint({"step": 1, "weights": weights}, path)
    io.wait()
    path.with_name(path.name + ".first-done").write_text(str(os.getpid()))
    weights.fill_(2.0)
    io.save_checkpoint({"step": 2, "weights": weights}, path)
    weights.fill_(3.0)  # after the save point: must never reach the file
    time.sleep(60)
