"""What the Gaudi emulation's ``"hpu"`` device mode costs per torch call, side by side with and without it.

Importing the emulated ``habana_frameworks`` pushes a ``TorchFunctionMode`` (``HPUOnCPUMode``) that maps ``"hpu"``
to the CPU; while it is active every torch call of that thread makes one extra Python call. This script times the
same work without the mode and with it, in one run, and prints the ratio. Measured on a loaded 2-core machine: about
1 to 4 microseconds more per call on tiny ops (1.6x-2.3x), 1.2x-1.7x on a small CPU training step; an empty mode
costs the same, so it is the mode machinery, not the device check. The mode is only ever active in scripts that
import ``habana_frameworks`` on the stand-in.

    python benchmarks/emulation_device_mode.py
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from lightning_hpu.runtime.standin.emulation.device_mode import HPUOnCPUMode


def _per_call(fn: Callable[[], object], calls_per_fn: int, repeats: int) -> float:
    """Seconds per torch call: the best of five timed loops (the machine is shared)."""
    for _ in range(10):
        fn()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(repeats):
            fn()
        best = min(best, time.perf_counter() - start)
    return best / (repeats * calls_per_fn)


def _workloads(width: int, batch: int) -> dict[str, tuple[Callable[[], object], int, int]]:
    a, b = torch.randn(8, 8), torch.randn(8, 8)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(batch, width), torch.randint(0, 10, (batch,))

    def tiny_ops() -> object:
        return torch.mm(a + b, b).relu()

    def train_step() -> object:
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    # (work, torch calls it makes as counted by the mode's entry point, repeats per timed loop)
    return {
        "3 ops on 8x8 tensors": (tiny_ops, 3, 2000),
        f"train step, width {width}": (train_step, 1, 100),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"{'work':>28} {'without us':>11} {'with us':>9} {'with/without':>13}")
    for name, (fn, calls, repeats) in _workloads(args.width, args.batch).items():
        without = _per_call(fn, calls, repeats)
        with HPUOnCPUMode():
            with_mode = _per_call(fn, calls, repeats)
        print(f"{name:>28} {without * 1e6:11.2f} {with_mode * 1e6:9.2f} {with_mode / without:13.2f}")


if __name__ == "__main__":
    main()
