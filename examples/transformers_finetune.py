"""Fine-tune Hugging Face Transformers models on HPUs with Lightning, set up from an optimum-habana GaudiConfig.

Two stock ``transformers`` models, each built from a small config with random weights (nothing is downloaded; token
ids are random, so no tokenizer is needed): a BERT sequence classifier and a GPT-2 causal language model. Each
trains in a LightningModule on ``accelerator="hpu"`` with what the ``gaudi_config.json`` asks for (bf16 autocast,
the fused AdamW in place of AdamW, the fused gradient clip), the transformer blocks compiled with ``hpu_backend``
(regional compilation), data-parallel over the HPUs, and the throughput/MFU monitor.

On a Gaudi node:   python examples/transformers_finetune.py --devices 8
Without a Gaudi:   LIGHTNING_HPU_BACKEND=cpu LIGHTNING_HPU_CPU_DEVICES=2 python examples/transformers_finetune.py \
                       --devices 2 --max-steps 4

Needs ``pip install 'lightning-hpu[transformers]'``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import torch
from lightning.pytorch import LightningModule, Trainer
from lightning.pytorch.loggers import CSVLogger
from torch.utils.data import DataLoader, TensorDataset
from transformers import BertConfig, BertForSequenceClassification, GPT2Config, GPT2LMHeadModel
from transformers.models.bert.modeling_bert import BertLayer
from transformers.models.gpt2.modeling_gpt2 import GPT2Block

from lightning_hpu import GaudiConfig, HPUCompile, HPULossLogger, HPUParallelStrategy, HPUThroughputMonitor, run_script

#: Habana/gpt2's gaudi_config.json (also Habana/bert-base-uncased's).
GAUDI_CONFIG = Path(__file__).with_name("gaudi_config.json")
VOCAB, SEQUENCE, BATCH = 128, 32, 4


def tiny_classifier() -> BertForSequenceClassification:
    config = BertConfig(
        vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
        max_position_embeddings=SEQUENCE, num_labels=3, attn_implementation="eager",
    )  # fmt: skip
    return BertForSequenceClassification(config)


def tiny_causal_lm() -> GPT2LMHeadModel:
    config = GPT2Config(
        vocab_size=VOCAB, n_embd=64, n_layer=2, n_head=4, n_positions=SEQUENCE, attn_implementation="eager"
    )
    return GPT2LMHeadModel(config)


class TransformersModule(LightningModule):
    """Any Transformers model whose forward returns a loss when given ``labels``."""

    def __init__(self, task: str, lr: float = 2e-3) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.task = task
        self.model = tiny_classifier() if task == "classification" else tiny_causal_lm()
        self.lr = lr
        self.losses: list[float] = []
        # For the MFU: ~6 FLOPs per parameter and token for forward + backward.
        self.flops_per_batch = 6 * sum(p.numel() for p in self.model.parameters()) * BATCH * SEQUENCE

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        input_ids, labels = batch
        loss = self.model(input_ids=input_ids, labels=labels).loss
        self.losses.append(float(loss.detach()))  # printed at the end (a host read per step: fine for an example)
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        # Plain AdamW: the GaudiConfig's `use_fused_adam` swaps it for the fused AdamW.
        return torch.optim.AdamW(self.parameters(), lr=self.lr, eps=1e-6, weight_decay=0.0)

    def train_dataloader(self) -> DataLoader:
        generator = torch.Generator().manual_seed(1)
        # One batch per HPU, seen again every step: the loss falls within a few steps.
        input_ids = torch.randint(0, VOCAB, (BATCH * self.trainer.world_size, SEQUENCE), generator=generator)
        # Classification: the first token decides the class. Causal LM: the model shifts the labels itself.
        labels = input_ids[:, 0] % 3 if self.task == "classification" else input_ids
        return DataLoader(TensorDataset(input_ids, labels), batch_size=BATCH)


def fine_tune(task: str, args: argparse.Namespace) -> list[float]:
    config = GaudiConfig.from_json(args.gaudi_config)
    module = TransformersModule(task)
    blocks = BertLayer if task == "classification" else GPT2Block
    logger = HPULossLogger(nan_inf_filter=True)
    monitor = HPUThroughputMonitor(batch_size_fn=lambda batch: batch[0].shape[0], warmup_steps=1, window_size=2)
    arguments = config.trainer_arguments()
    trainer = Trainer(
        accelerator="hpu",
        devices=args.devices,
        strategy=HPUParallelStrategy(),
        max_steps=args.max_steps,
        gradient_clip_val=1.0,
        log_every_n_steps=1,
        callbacks=[*arguments["callbacks"], HPUCompile(modules=[blocks]), logger, monitor],
        plugins=arguments["plugins"],
        logger=CSVLogger(args.log_dir, name=f"transformers_{task}"),
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(module)
    losses = module.losses
    if trainer.is_global_zero:
        optimizer = type(trainer.optimizers[0]).__name__
        mfu = trainer.logged_metrics.get("train/device/mfu")
        print(
            f"{task}: losses {', '.join(f'{loss:.3f}' for loss in losses)}; precision {trainer.precision},"
            f" optimizer {optimizer}, {trainer.world_size} HPUs"
            + (f", MFU {float(mfu):.2e}" if mfu is not None else "")
        )
    return losses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=2)
    parser.add_argument("--max-steps", type=int, default=8)
    parser.add_argument("--task", choices=["classification", "causal-lm", "both"], default="both")
    parser.add_argument("--gaudi-config", type=Path, default=GAUDI_CONFIG)
    parser.add_argument("--log-dir", default="lightning_logs", help="where the CSV logs go")
    args = parser.parse_args()
    for task in ("classification", "causal-lm") if args.task == "both" else (args.task,):
        fine_tune(task, args)


if __name__ == "__main__":
    run_script(main)
