"""Replay cost against eager on the current backend: one training step (forward, backward, SGD step).

On a Gaudi, replay skips the host's per-op work and is faster when training is host bound. On the CPU stand-in a
replay re-dispatches every recorded aten op from Python and copies fresh results into the graph's tensors, but it
skips autograd's graph building and the optimizer's Python, so it lands near eager (measured 0.5x-1.3x of eager
time on a loaded 2-core machine). The stand-in is for checking graph semantics, not for speed: this script prints
both, side by side in the same run, so nobody reads more into it.

    LIGHTNING_HPU_BACKEND=cpu python benchmarks/hpu_graphs_replay.py
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F
from torch import nn

from lightning_hpu.hpu_graphs import HPUGraph, graph
from lightning_hpu.runtime import require_backend


def _model(width: int, depth: int, device: torch.device) -> nn.Module:
    torch.manual_seed(0)
    layers: list[nn.Module] = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(width, 10)).to(device)


def _time(fn, steps: int) -> float:  # type: ignore[no-untyped-def]
    backend = require_backend()
    for _ in range(3):
        fn()
    backend.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        fn()
    backend.synchronize()
    return (time.perf_counter() - start) / steps


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1, help="CPU threads for torch (stand-in only)")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    backend = require_backend()
    device = backend.torch_device()
    print(f"backend: {backend.name}, device: {backend.device_name()}")
    print(f"{'model':>16} {'ops':>5} {'eager ms':>9} {'replay ms':>10} {'replay/eager':>13}")
    for width, depth in ((64, 2), (256, 4), (1024, 4)):
        x = torch.randn(args.batch, width, device=device)
        y = torch.randint(0, 10, (args.batch,), device=device)

        eager_model = _model(width, depth, device)
        eager_opt = torch.optim.SGD(eager_model.parameters(), lr=0.01)

        def eager_step(
            model: nn.Module = eager_model,
            opt: torch.optim.Optimizer = eager_opt,
            x: torch.Tensor = x,
            y: torch.Tensor = y,
        ) -> None:
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(model(x), y).backward()
            opt.step()
            backend.mark_step()

        graph_model = _model(width, depth, device)
        graph_opt = torch.optim.SGD(graph_model.parameters(), lr=0.01)
        static_x, static_y = x.clone(), y.clone()
        g = HPUGraph()
        graph_opt.zero_grad(set_to_none=True)
        with graph(g):
            F.cross_entropy(graph_model(static_x), static_y).backward()
            graph_opt.step()

        eager_s = _time(eager_step, args.steps)
        replay_s = _time(g.replay, args.steps)
        ops = getattr(g.handle, "num_ops", "-")
        print(
            f"{f'{depth}x{width}':>16} {ops:>5} {eager_s * 1e3:>9.3f} {replay_s * 1e3:>10.3f}"
            f" {replay_s / eager_s:>12.2f}x"
        )


if __name__ == "__main__":
    main()
