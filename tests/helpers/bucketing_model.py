"""A token model on variable-length samples, bucketed with ``lightning_hpu.data``, shared by the bucketing tests.

Each training step checks loss masking: the loss of the padded batch must equal the loss computed on the samples
without padding, and it records the batch's shape, sample indices and that difference in ``self.seen``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from lightning.pytorch import LightningModule
from torch import nn
from torch.utils.data import BatchSampler, DataLoader, Dataset, RandomSampler

from lightning_hpu.data import IGNORE_INDEX, BucketPadCollate, LengthGroupedBatchSampler

VOCAB = 32


def sample_lengths(count: int = 48) -> list[int]:
    generator = torch.Generator().manual_seed(3)
    return [int(n) for n in torch.randint(3, 30, (count,), generator=generator)]


class Tokens(Dataset):
    def __init__(self, lengths: Sequence[int]) -> None:
        generator = torch.Generator().manual_seed(0)
        self.samples = [torch.randint(0, VOCAB, (n + 1,), generator=generator) for n in lengths]

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int) -> dict[str, Any]:
        tokens = self.samples[index]
        return {"input_ids": tokens[:-1], "labels": tokens[1:], "index": index}


class BucketedTokenModel(LightningModule):
    def __init__(self, buckets: Sequence[int], grouped: bool = False, batch_size: int = 4) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.embed = nn.Embedding(VOCAB, 16)
        self.head = nn.Linear(16, VOCAB)
        self.buckets = list(buckets)
        self.grouped = grouped
        self.batch_size = batch_size
        self.lengths = sample_lengths()
        self.seen: list[dict[str, Any]] = []

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.embed(input_ids))

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        logits = self(batch["input_ids"])
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), batch["labels"].flatten(), ignore_index=IGNORE_INDEX)
        with torch.no_grad():
            lengths = batch["attention_mask"].sum(1).tolist()
            unpadded = torch.cat([logits[row, :n] for row, n in enumerate(lengths)])
            targets = torch.cat([batch["labels"][row, :n] for row, n in enumerate(lengths)])
            reference = nn.functional.cross_entropy(unpadded, targets)
        self.seen.append(
            {
                "shape": list(batch["input_ids"].shape),
                "indices": batch["index"].tolist(),
                "lengths": lengths,
                "loss_diff": abs(float(loss.detach()) - float(reference)),
            }
        )
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self) -> DataLoader:
        dataset = Tokens(self.lengths)
        sampler = RandomSampler(dataset, generator=torch.Generator().manual_seed(1))
        batches: BatchSampler
        if self.grouped:
            batches = LengthGroupedBatchSampler(sampler, self.batch_size, drop_last=False, lengths=self.lengths)
        else:
            batches = BatchSampler(sampler, self.batch_size, drop_last=False)
        collate = BucketPadCollate(self.buckets, padding_values={"input_ids": 0, "labels": IGNORE_INDEX})
        return DataLoader(dataset, batch_sampler=batches, collate_fn=collate)
