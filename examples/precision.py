"""Train a small model on HPU with a chosen precision, Habana's fused AdamW and fused gradient clipping.

Runs as is on a Gaudi; without one, set ``LIGHTNING_HPU_BACKEND=cpu`` to run on the CPU stand-in (where ``fp8``
runs on the stand-in's emulated Transformer Engine; on an emulated first-generation Gaudi it stops with a clear
error, as fp8 needs Gaudi2 or later).

    LIGHTNING_HPU_BACKEND=cpu python examples/precision.py --precision bf16-mixed --max-steps 20
    LIGHTNING_HPU_BACKEND=cpu python examples/precision.py --precision fp8 --fp8-format HYBRID --max-steps 20
    python examples/precision.py --lower-precision-ops linear matmul --fp32-ops softmax
"""

from __future__ import annotations

import argparse
from typing import Any

import torch
from lightning.pytorch import LightningModule, Trainer
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from lightning_hpu import HPUAccelerator, HPUPrecisionPlugin, fused_adamw, run_script


class Regressor(LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 1))
        self.forward_dtype: torch.dtype | None = None

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        out = self.net(x)
        self.forward_dtype = out.dtype
        # Both sides in fp32: under bf16-true the batch arrives in bf16 too, and torch 2.9's mse_loss backward
        # refuses mixed dtypes ("Found dtype BFloat16 but expected Float").
        loss = nn.functional.mse_loss(out.float(), y.float())
        self.log("loss", loss, prog_bar=True)
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        # Habana's FusedAdamW on a Gaudi, the stand-in's (same update) on the CPU; eps=1e-6 and weight_decay=0.0.
        return fused_adamw(self.parameters(), lr=1e-2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--precision", default="bf16-mixed")
    parser.add_argument("--max-steps", type=int, default=50)
    parser.add_argument("--clip", type=float, default=1.0, help="gradient_clip_val (by norm: the fused clip)")
    parser.add_argument("--lower-precision-ops", nargs="*", default=None)
    parser.add_argument("--fp32-ops", nargs="*", default=None)
    parser.add_argument("--fp8-format", default="HYBRID", help="DelayedScaling fp8_format for --precision fp8")
    args = parser.parse_args()

    fp8_options: dict[str, Any] = {}
    if args.precision == "fp8":
        fp8_options["fp8_recipe"] = {"margin": 0, "interval": 1, "fp8_format": args.fp8_format}
    plugin = HPUPrecisionPlugin(
        args.precision,
        autocast_lower_precision_ops=args.lower_precision_ops,
        autocast_fp32_ops=args.fp32_ops,
        **fp8_options,
    )

    generator = torch.Generator().manual_seed(0)
    x = torch.randn(512, 32, generator=generator)
    y = x @ torch.randn(32, 1, generator=generator)
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)

    model = Regressor()
    trainer = Trainer(
        accelerator=HPUAccelerator(),
        devices=1,
        plugins=[plugin],
        max_steps=args.max_steps,
        gradient_clip_val=args.clip,
        logger=False,
        enable_checkpointing=False,
        enable_model_summary=False,
    )
    trainer.fit(model, loader)
    print(f"precision: {plugin.precision}, forward dtype: {model.forward_dtype}")
    print(f"final loss: {float(trainer.callback_metrics['loss']):.4f}")
    if plugin.fp8_layers:
        print(f"fp8 layers: {', '.join(plugin.fp8_layers)}")


if __name__ == "__main__":
    run_script(main)
