"""Train a small regression model with DeepSpeed ZeRO on HPUs (one script, one ``--stage`` per ZeRO stage).

On a Gaudi::

    .venv/bin/python examples/deepspeed_zero.py --stage 2 --devices 8

Without one, on the CPU stand-in (two emulated HPUs)::

    LIGHTNING_HPU_BACKEND=cpu LIGHTNING_HPU_CPU_DEVICES=2 \
        .venv/bin/python examples/deepspeed_zero.py --stage 2 --devices 2

``--offload`` moves the optimizer state to the host (ZeRO-Offload; stage 3 also offloads the parameters) and
steps it with DeepSpeed's CPU Adam, a C++ extension DeepSpeed compiles on first use (minutes, once: the build is
kept under ``TORCH_EXTENSIONS_DIR``, by default ``~/.cache/torch_extensions``);
``--activation-checkpointing`` recomputes the second layer's activations in backward with DeepSpeed's
``checkpoint``. ``--config examples/deepspeed_bf16_zero2.json --accumulate-grad-batches 2 --devices 2`` runs
the DeepSpeed JSON config of the Lightning HPU docs (bf16, ZeRO-2, WarmupDecayLR). ``--out DIR`` writes each
rank's losses and final weights there (``rank<N>.pt``).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import torch
from lightning.pytorch import LightningModule, Trainer, seed_everything
from lightning.pytorch.plugins import DeepSpeedPrecision
from torch import Tensor, nn
from torch.utils.data import DataLoader, TensorDataset

from lightning_hpu import HPUAccelerator, HPUDeepSpeedStrategy, run_script


class RegressionModel(LightningModule):
    """Two linear layers learning ``y = 2 * x[0] + 1``; optionally checkpoints the second layer's activations."""

    def __init__(self, activation_checkpointing: bool = False, lr: float = 0.05, cpu_adam: bool = False) -> None:
        super().__init__()
        self.l1 = nn.Linear(16, 32)
        self.l2 = nn.Sequential(nn.ReLU(), nn.Linear(32, 1))
        self.activation_checkpointing = activation_checkpointing
        self.lr = lr
        self.cpu_adam = cpu_adam
        self.losses: list[float] = []
        self.lrs: list[float] = []

    def forward(self, x: Tensor) -> Tensor:
        hidden = self.l1(x)
        if self.activation_checkpointing:
            from deepspeed.runtime.activation_checkpointing.checkpointing import checkpoint

            return checkpoint(self.l2, hidden)
        return self.l2(hidden)

    def training_step(self, batch: tuple[Tensor, Tensor], batch_idx: int) -> Tensor:
        x, y = batch
        loss = nn.functional.mse_loss(self(x).float(), y.float())
        self.losses.append(loss.item())
        self.lrs.append(self.trainer.optimizers[0].param_groups[0]["lr"])
        self.log("train_loss", loss, prog_bar=True, sync_dist=True)  # the mean over all HPUs
        return loss

    def predict_step(self, batch: tuple[Tensor, Tensor], batch_idx: int) -> Tensor:
        return self(batch[0])

    def configure_optimizers(self) -> torch.optim.Optimizer:
        if self.cpu_adam:
            # ZeRO-Offload steps the optimizer on the host: DeepSpeed's CPU Adam (compiled on first use).
            from deepspeed.ops.adam import DeepSpeedCPUAdam

            if self.trainer.is_global_zero and not cpu_adam_built():
                print(
                    "Building DeepSpeed's cpu_adam extension (C++, for the host-side Adam of ZeRO-Offload): this takes"
                    f" a few minutes, once; later runs reuse the build in {extensions_root()}.",
                    flush=True,
                )

            return DeepSpeedCPUAdam(self.parameters(), lr=self.lr)
        # A torch optimizer: DeepSpeed needs no compiled op for it (`zero_allow_untested_optimizer`).
        return torch.optim.SGD(self.parameters(), lr=self.lr)


def extensions_root() -> Path:
    """Where torch keeps compiled extensions: ``TORCH_EXTENSIONS_DIR``, else its default (``~/.cache/...``)."""
    from torch.utils.cpp_extension import get_default_build_root

    return Path(os.environ.get("TORCH_EXTENSIONS_DIR") or get_default_build_root())


def cpu_adam_built() -> bool:
    """Whether DeepSpeed's cpu_adam op came prebuilt with DeepSpeed or was compiled here before."""
    from deepspeed.git_version_info import installed_ops

    # torch builds into <root>/cpu_adam with TORCH_EXTENSIONS_DIR set, else into <root>/py<version>_<device>/cpu_adam.
    builds = (*extensions_root().glob("cpu_adam/cpu_adam*.so"), *extensions_root().glob("*/cpu_adam/cpu_adam*.so"))
    return bool(installed_ops.get("cpu_adam")) or bool(builds)


def dataloader(samples: int = 64, batch_size: int = 8) -> DataLoader:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(samples, 16, generator=generator)
    return DataLoader(TensorDataset(x, 2 * x[:, :1] + 1), batch_size=batch_size)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stage", type=int, choices=(1, 2, 3), default=2, help="ZeRO stage")
    parser.add_argument("--devices", type=int, default=1, help="HPUs (processes) to train on")
    parser.add_argument("--max-steps", type=int, default=16)
    parser.add_argument("--precision", default="bf16-mixed", help="DeepSpeed precision, e.g. bf16-mixed or 32-true")
    parser.add_argument("--offload", action="store_true", help="offload the optimizer (and ZeRO-3 parameters)")
    parser.add_argument("--activation-checkpointing", action="store_true")
    parser.add_argument("--config", type=Path, help="a DeepSpeed JSON config (replaces --stage and --offload)")
    parser.add_argument("--accumulate-grad-batches", type=int, default=1)
    parser.add_argument("--out", type=Path, help="directory for each rank's losses and weights")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> RegressionModel:
    args = parse_args(argv)
    seed_everything(0)
    model = RegressionModel(activation_checkpointing=args.activation_checkpointing, cpu_adam=args.offload)
    if args.config is not None:
        strategy = HPUDeepSpeedStrategy(config=args.config)
    else:
        strategy = HPUDeepSpeedStrategy(
            zero_optimization=True,
            stage=args.stage,
            offload_optimizer=args.offload,
            offload_parameters=args.offload and args.stage == 3,
            cpu_checkpointing=args.activation_checkpointing,
        )
    initial = {name: p.detach().float().clone() for name, p in model.named_parameters()}
    trainer = Trainer(
        accelerator=HPUAccelerator(),
        devices=args.devices,
        strategy=strategy,
        plugins=[DeepSpeedPrecision(precision=args.precision)],
        max_steps=args.max_steps,
        accumulate_grad_batches=args.accumulate_grad_batches,
        enable_progress_bar=False,
        enable_checkpointing=False,
        logger=False,
    )
    trainer.fit(model, dataloader())
    print(f"rank {trainer.global_rank}: loss {model.losses[0]:.4f} -> {model.losses[-1]:.4f}")
    if args.out is not None and not trainer.strategy.zero_stage_3:  # ZeRO-3 shards the weights, 1-2 replicate them
        args.out.mkdir(parents=True, exist_ok=True)
        weights = {name: p.detach().float().cpu() for name, p in model.named_parameters()}
        logged = float(trainer.callback_metrics["train_loss"])
        result = {"losses": model.losses, "lrs": model.lrs, "logged": logged, "initial": initial, "weights": weights}
        torch.save(result, args.out / f"rank{trainer.global_rank}.pt")
    return model


if __name__ == "__main__":
    run_script(main)
