"""Eager vs torch.compile vs regional compilation on the CPU stand-in, side by side from one run.

    LIGHTNING_HPU_BACKEND=cpu python benchmarks/compile.py [--depths 2 4 8] [--steps 10]

For each depth it trains a stack of identical transformer blocks with ``hpu_backend`` three ways: eager (nothing
compiled), the whole model compiled, and each block compiled on its own (regional, what ``HPUCompile(modules=[Block])``
does). It prints the first step's time (which holds the compilation), the steady per-step time, the number of Dynamo
graphs, and ratios against eager and against the smallest depth. On the stand-in the compiled graphs run eagerly on
the CPU, so per-step ratios say nothing about Gaudi speed; compile time against depth is the point: regional
compilation compiles one block however deep the model is. Times are this process's CPU time on one thread, so other
work on a shared machine does not distort them.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("LIGHTNING_HPU_BACKEND", "cpu")

import torch
from torch import nn
from torch._dynamo.utils import counters

import lightning_hpu  # noqa: F401  (registers hpu_backend on the stand-in)

sys.path.insert(0, str(Path(__file__).resolve().parent))
import plots
from progress import progress

WIDTH, HEADS, BATCH, LENGTH = 64, 4, 16, 32


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(WIDTH)
        self.attention = nn.MultiheadAttention(WIDTH, HEADS, batch_first=True)
        self.norm2 = nn.LayerNorm(WIDTH)
        self.mlp = nn.Sequential(nn.Linear(WIDTH, 4 * WIDTH), nn.GELU(), nn.Linear(4 * WIDTH, WIDTH))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm1(x)
        x = x + self.attention(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


def build(depth: int, mode: str) -> nn.Module:
    torch.manual_seed(0)
    model = nn.Sequential(*[Block() for _ in range(depth)])
    if mode == "compiled":
        model.compile(backend="hpu_backend")
    elif mode == "regional":
        for block in model:
            block.compile(backend="hpu_backend")
    return model


def measure(depth: int, mode: str, steps: int) -> tuple[float, float, int]:
    """(first step seconds, median steady step seconds, Dynamo graphs compiled)."""
    torch._dynamo.reset()
    graphs_before = counters["stats"]["unique_graphs"]
    model = build(depth, mode)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(BATCH, LENGTH, WIDTH, generator=torch.Generator().manual_seed(1))
    times = []
    for _ in range(steps + 1):
        start = time.process_time()
        optimizer.zero_grad(set_to_none=True)
        model(x).square().mean().backward()
        optimizer.step()
        times.append(time.process_time() - start)
    steady = sorted(times[1:])[len(times[1:]) // 2]
    return times[0], steady, counters["stats"]["unique_graphs"] - graphs_before


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--depths", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    torch.set_num_threads(1)
    measure(1, "regional", 1)  # pays Dynamo's and AOTAutograd's one-time start-up before anything is timed
    results = {}
    for depth in args.depths:
        for mode in ("eager", "compiled", "regional"):
            progress(f"depth {depth}, {mode}: {args.steps} steps...")
            results[depth, mode] = measure(depth, mode, args.steps)

    print(f"{'depth':>5} {'mode':>9} {'first step':>11} {'per step':>9} {'graphs':>6} {'per step / eager':>16}")
    for (depth, mode), (first, steady, graphs) in results.items():
        ratio = steady / results[depth, "eager"][1]
        print(f"{depth:>5} {mode:>9} {first * 1e3:>9.1f}ms {steady * 1e3:>7.2f}ms {graphs:>6} {ratio:>15.2f}x")

    print("\ncompile time (first step minus a steady step) against the smallest depth:")
    base = args.depths[0]
    for mode in ("compiled", "regional"):
        cost = {d: results[d, mode][0] - results[d, mode][1] for d in args.depths}
        ratios = "  ".join(f"depth {d}: {cost[d] * 1e3:.0f}ms ({cost[d] / cost[base]:.2f}x)" for d in args.depths)
        print(f"  {mode:>9}: {ratios}")
    plots.lines(
        "compile",
        "Compile time (first step minus a steady step) against depth",
        "transformer blocks",
        "ms",
        args.depths,
        {
            mode: [(results[depth, mode][0] - results[depth, mode][1]) * 1e3 for depth in args.depths]
            for mode in ("compiled", "regional")
        },
    )


if __name__ == "__main__":
    main()
