"""What the stand-in's ``hpu`` device costs: one training step of a small MLP on ``hpu`` against the same on the CPU.

Every op on the stand-in's ``hpu`` runs the CPU's kernel on host views of the tensors' bytes (no copies); the cost is
the dispatch through the device's fallback. Both devices run the same step (forward, loss, backward, AdamW step) in
the same process, interleaved round by round so that a shared machine's load falls on both, on one thread, and the
ratio of the medians is printed. Run:

    LIGHTNING_HPU_BACKEND=cpu .venv/bin/python benchmarks/device_step.py
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from torch import nn

from lightning_hpu.runtime import require_backend


def make_step(device: torch.device, width: int, batch: int) -> tuple[nn.Module, object]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 1))
    model = model.to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(batch, width, device=device)
    y = torch.randn(batch, 1, device=device)

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()

    return model, step


def time_steps(step: object, steps: int) -> float:
    """CPU seconds per step (this thread's only: the machine's other work is not counted)."""
    start = time.thread_time()
    for _ in range(steps):
        step()  # type: ignore[operator]
    return (time.thread_time() - start) / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    torch.set_num_threads(1)
    hpu = require_backend().torch_device()
    devices = {"cpu": torch.device("cpu"), "hpu": hpu}
    steps = {name: make_step(device, args.width, args.batch)[1] for name, device in devices.items()}
    for step in steps.values():
        time_steps(step, 10)  # warm-up
    times: dict[str, list[float]] = {name: [] for name in devices}
    for _ in range(args.rounds):
        for name, step in steps.items():
            times[name].append(time_steps(step, args.steps))
    cpu = statistics.median(times["cpu"])
    shape = f"MLP {args.width}x3, batch {args.batch}, AdamW"
    print(f"{shape}; median of {args.rounds} rounds x {args.steps} steps, 1 thread")
    print("| device | CPU us/step | vs cpu |")
    print("| --- | --- | --- |")
    for name in devices:
        median = statistics.median(times[name])
        print(f"| {devices[name]} | {median * 1e6:.0f} | {median / cpu:.2f}x |")


if __name__ == "__main__":
    main()
