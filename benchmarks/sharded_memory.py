"""Peak memory per rank with FSDP against DDP on the same model, printed side by side as a ratio.

Each strategy trains the same model (a stack of wide MLP blocks, AdamW) for a few steps in its own 2-process run;
every rank reports

* the bytes of training state it holds (parameters, gradients, optimizer state: its shards under FSDP), and
* its peak device memory (``MaxInUse`` of its HPU's memory statistics; a fresh process starts from nothing on its
  HPU; on the CPU stand-in the bytes of live ``hpu`` tensors, counted by its allocator).

    python benchmarks/sharded_memory.py --devices 8                 # on a Gaudi node
    LIGHTNING_HPU_BACKEND=cpu LIGHTNING_HPU_CPU_DEVICES=2 python benchmarks/sharded_memory.py --devices 2
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import plots
from progress import progress

MiB = 2**20


def _worker(strategy_name: str, devices: int, width: int, blocks: int, out: Path) -> None:
    import torch
    from lightning.pytorch import LightningModule, Trainer
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset

    from lightning_hpu import HPUFSDPStrategy, get_backend

    backend = get_backend()
    assert backend is not None

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.up, self.down = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + self.down(torch.relu(self.up(x)))

    class Model(LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.blocks = nn.Sequential(*(Block() for _ in range(blocks)))

        def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
            return self.blocks(batch[0]).pow(2).mean()

        def configure_optimizers(self) -> torch.optim.Optimizer:
            return torch.optim.AdamW(self.parameters(), lr=1e-4)

        def train_dataloader(self) -> DataLoader:
            return DataLoader(TensorDataset(torch.randn(64, width)), batch_size=8)

    strategy: Any = HPUFSDPStrategy(auto_wrap_policy={Block}) if strategy_name == "fsdp" else "hpu_parallel"
    trainer = Trainer(
        accelerator="hpu",
        devices=devices,
        strategy=strategy,
        max_steps=4,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(Model())
    peak = backend.memory_stats()["MaxInUse"]  # of this rank's HPU (the process is bound to it by now)
    model = trainer.strategy.model
    assert model is not None
    tensors = [p for p in model.parameters()] + [p.grad for p in model.parameters() if p.grad is not None]
    for state in trainer.optimizers[0].state.values():
        tensors += [value for value in state.values() if isinstance(value, torch.Tensor)]
    held = sum(tensor.numel() * tensor.element_size() for tensor in tensors)
    report = {"state_bytes": held, "peak_bytes": peak}
    (out / f"{strategy_name}_rank{trainer.global_rank}.json").write_text(json.dumps(report))


def _run(strategy_name: str, args: argparse.Namespace, out: Path) -> list[dict[str, int]]:
    progress(f"training with {strategy_name.upper()} on {args.devices} stand-in HPUs...")
    command = [sys.executable, __file__, "--worker", strategy_name, "--devices", str(args.devices)]
    command += ["--width", str(args.width), "--blocks", str(args.blocks), "--out", str(out)]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return [json.loads((out / f"{strategy_name}_rank{rank}.json").read_text()) for rank in range(args.devices)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--devices", type=int, default=2)
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--blocks", type=int, default=8)
    parser.add_argument("--worker", choices=("ddp", "fsdp"), default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        _worker(args.worker, args.devices, args.width, args.blocks, args.out)
        return
    with tempfile.TemporaryDirectory() as folder:
        results = {name: _run(name, args, Path(folder)) for name in ("ddp", "fsdp")}
    parameters = args.blocks * (2 * 4 * args.width * args.width + 5 * args.width)
    print(f"model: {parameters / 1e6:.1f} M parameters, AdamW, {args.devices} ranks")
    header = ("rank", "state DDP", "state FSDP", "ratio", "peak DDP", "peak FSDP", "ratio")
    print("{:>4} | {:>10} {:>10} {:>6} | {:>10} {:>10} {:>6}".format(*header))
    for rank in range(args.devices):
        ddp, fsdp = results["ddp"][rank], results["fsdp"][rank]
        print(
            f"{rank:>4} | {ddp['state_bytes'] / MiB:>8.1f}Mi {fsdp['state_bytes'] / MiB:>8.1f}Mi"
            f" {fsdp['state_bytes'] / ddp['state_bytes']:>6.2f} | {ddp['peak_bytes'] / MiB:>8.1f}Mi"
            f" {fsdp['peak_bytes'] / MiB:>8.1f}Mi {fsdp['peak_bytes'] / max(ddp['peak_bytes'], 1):>6.2f}"
        )
    print("ratio = FSDP / DDP per rank (below 1: sharding holds less per rank)")
    ranks = range(args.devices)
    plots.bars(
        "sharded_memory",
        f"HPU memory per rank, {parameters / 1e6:.1f} M parameters, AdamW, {args.devices} ranks",
        "MiB",
        [f"rank {rank}" for rank in ranks],
        {
            f"{kind} {name.upper()}": [results[name][rank][f"{kind}_bytes"] / MiB for rank in ranks]
            for kind in ("state", "peak")
            for name in ("ddp", "fsdp")
        },
    )


if __name__ == "__main__":
    main()
