"""The training stall of a checkpoint save, synchronous vs asynchronous, for a ~200 MB model, from one run.

    LIGHTNING_HPU_BACKEND=cpu python benchmarks/async_checkpoint.py [--megabytes 200] [--rounds 3]

The stall is how long ``save_checkpoint`` keeps the training thread: for ``HPUCheckpointIO`` the host copy and the
whole write (temporary file, fsync, rename); for ``HPUAsyncCheckpointIO`` the host copy only (into the host buffers
of the previous save, whose write has finished), the write running on a background thread. It prints the median of
``--rounds`` saves of each, their ratio, and how long the background write took to finish. The model lives on the
backend's device (``torch_device()``); on the stand-in that is host memory, so the host copy is a memory copy rather
than a device-to-host transfer.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LIGHTNING_HPU_BACKEND", "cpu")

import plots
from torch import nn

from lightning_hpu import HPUAsyncCheckpointIO, HPUCheckpointIO
from lightning_hpu.runtime import require_backend


def model_of(megabytes: int) -> nn.Module:
    width = 4096
    layers = max(1, megabytes * 2**20 // (4 * width * width))
    return nn.Sequential(*[nn.Linear(width, width, bias=False) for _ in range(layers)]).to(
        require_backend().torch_device()
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--megabytes", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    model = model_of(args.megabytes)
    size = sum(p.numel() * p.element_size() for p in model.parameters()) / 2**20
    sync_io, async_io = HPUCheckpointIO(), HPUAsyncCheckpointIO()
    stalls: dict[str, list[float]] = {"sync": [], "async": []}
    background: list[float] = []
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "model.ckpt"
        for _ in range(args.rounds):
            checkpoint = {"state_dict": model.state_dict()}
            start = time.perf_counter()
            sync_io.save_checkpoint(checkpoint, path)
            stalls["sync"].append(time.perf_counter() - start)
            start = time.perf_counter()
            async_io.save_checkpoint(checkpoint, path)
            stalls["async"].append(time.perf_counter() - start)
            async_io.wait()
            background.append(time.perf_counter() - start)
        async_io.teardown()
    sync, asynchronous = statistics.median(stalls["sync"]), statistics.median(stalls["async"])
    print(f"model {size:.0f} MB, median of {args.rounds} saves")
    print(f"{'':<34} {'stall s':>8} {'vs sync':>8}")
    print(f"{'HPUCheckpointIO (synchronous)':<34} {sync:>8.3f} {1.0:>7.2f}x")
    print(f"{'HPUAsyncCheckpointIO':<34} {asynchronous:>8.3f} {asynchronous / sync:>7.2f}x")
    print(f"background write finished after {statistics.median(background):.3f} s")
    plots.bars(
        "async_checkpoint",
        f"Training stall per save, {size:.0f} MB model, median of {args.rounds} saves",
        "seconds",
        ["HPUCheckpointIO: stall", "HPUAsyncCheckpointIO: stall", "HPUAsyncCheckpointIO: write done"],
        {"seconds": [sync, asynchronous, statistics.median(background)]},
    )


if __name__ == "__main__":
    main()
