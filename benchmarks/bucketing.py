"""Shape bucketing on a variable-length text task: recipes compiled, padding and CPU time, with and without buckets.

    LIGHTNING_HPU_BACKEND=cpu python benchmarks/bucketing.py [--samples 2048] [--batch-size 16] [--buckets 8]

A synthetic corpus with a long-tailed length distribution (a Pareto tail above 64 tokens: median ~84, 99th
percentile ~365, clipped at 1024) trains a small token model compiled with ``hpu_backend`` for one epoch, five ways:
dynamic padding (each batch padded to its longest sample, the usual ``DataLoader``), the same with batches of
similar lengths, power-of-two buckets, ``--buckets`` fitted buckets, and fitted buckets with batches of similar
lengths (``LengthGroupedBatchSampler``). For each it prints the distinct device recipes compiled over the epoch (the
bridge's ``graph_compilation`` metric, read through the backend: one per compiled graph and concrete input shape,
as Habana's graph compiler builds them), the padding overhead (padding positions per real token; and as a share of
all positions) and the CPU time per step of this process, TorchDynamo's compilations included. On the stand-in a
recipe costs no compile time; on a Gaudi each is seconds to minutes of compilation.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Iterable, Sequence

os.environ.setdefault("LIGHTNING_HPU_BACKEND", "cpu")

import numpy as np
import plots
import torch
from torch import nn
from torch.utils.data import BatchSampler, DataLoader, RandomSampler, Sampler

from lightning_hpu.data import (
    IGNORE_INDEX,
    BucketPadCollate,
    LengthGroupedBatchSampler,
    fitted_buckets,
    padding_overhead,
    power_of_two_buckets,
)
from lightning_hpu.runtime import require_backend

VOCAB, WIDTH = 256, 64


def corpus_lengths(samples: int, seed: int = 0) -> list[int]:
    """Long-tailed lengths: 64 tokens plus a Pareto(2.5) tail, clipped at 1024."""
    rng = np.random.default_rng(seed)
    return [int(n) for n in np.clip(64 * (1 + rng.pareto(2.5, samples)), 1, 1024)]


class TokenCorpus(torch.utils.data.Dataset):
    """Random token sequences of the given lengths; the label of each token is the next token."""

    def __init__(self, lengths: Sequence[int]) -> None:
        generator = torch.Generator().manual_seed(0)
        self.samples = [torch.randint(0, VOCAB, (n + 1,), generator=generator) for n in lengths]

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        tokens = self.samples[index]
        return {"input_ids": tokens[:-1], "labels": tokens[1:]}


class TokenModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.mlp = nn.Sequential(nn.Linear(WIDTH, 2 * WIDTH), nn.GELU(), nn.Linear(2 * WIDTH, VOCAB))

    def forward(self, input_ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        logits = self.mlp(self.embed(input_ids))
        # Padded labels hold IGNORE_INDEX: cross_entropy leaves them out of the mean.
        return nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=IGNORE_INDEX)


def loader(dataset: TokenCorpus, batch_size: int, buckets: Iterable[int], grouped: bool) -> DataLoader:
    sampler: Sampler[int] = RandomSampler(dataset, generator=torch.Generator().manual_seed(1))
    batches: BatchSampler
    if grouped:
        lengths = [len(sample) - 1 for sample in dataset.samples]
        batches = LengthGroupedBatchSampler(sampler, batch_size, drop_last=True, lengths=lengths)
    else:
        batches = BatchSampler(sampler, batch_size, drop_last=True)
    collate = BucketPadCollate(buckets, padding_values={"input_ids": 0, "labels": IGNORE_INDEX})
    return DataLoader(dataset, batch_sampler=batches, collate_fn=collate)


def run_epoch(data: DataLoader, dynamic: bool | None) -> tuple[int, float, float, int]:
    """(recipes compiled, padding overhead, CPU seconds per step, steps) of one epoch."""
    backend = require_backend()
    device = backend.torch_device()
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = TokenModel().to(device)
    model.compile(backend="hpu_backend", dynamic=dynamic)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    recipes_before = backend.graph_compilation_count() or 0
    real = padded = steps = 0
    start = time.process_time()
    for batch in data:
        mask = batch["attention_mask"]
        real += int(mask.sum())
        padded += mask.numel()
        loss = model(batch["input_ids"].to(device), batch["labels"].to(device))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        steps += 1
    seconds = time.process_time() - start
    recipes = (backend.graph_compilation_count() or 0) - recipes_before
    return recipes, (padded - real) / real, seconds / steps, steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=2048)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--buckets", type=int, default=8)
    args = parser.parse_args()
    torch.set_num_threads(1)

    lengths = corpus_lengths(args.samples)
    dataset = TokenCorpus(lengths)
    longest = max(lengths)
    every_length = sorted(set(lengths))
    fitted = fitted_buckets(lengths, args.buckets)
    powers = power_of_two_buckets(longest, min(lengths))
    print(
        f"{args.samples} samples, lengths {min(lengths)}..{longest} (median {int(np.median(lengths))}),"
        f" batch size {args.batch_size}; fitted buckets {list(fitted)}"
        f" (per-sample padding bound {padding_overhead(lengths, fitted):.1%}); powers of two {list(powers)}"
    )
    # Without buckets: Dynamo's default (a changing size becomes dynamic, one graph); with buckets, one static graph
    # per bucket (dynamic=False), so no bucket is compiled twice (once static, once again by the dynamic graph).
    torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, len(fitted), len(powers))
    rows = [
        ("no bucketing (pad to the batch's longest)", every_length, False, None),
        ("no bucketing, similar-length batches", every_length, True, None),
        (f"powers of two ({len(powers)} buckets)", powers, False, len(powers)),
        (f"{len(fitted)} fitted buckets", fitted, False, len(fitted)),
        (f"{len(fitted)} fitted buckets, similar-length batches", fitted, True, len(fitted)),
    ]
    header = f"{'':<52} {'recipes':>8} {'buckets':>8} {'padding':>8} {'share':>7} {'CPU ms/step':>12} {'vs none':>8}"
    print(header)
    baseline: float | None = None
    figure: dict[str, list[float]] = {"recipes compiled": [], "padding, % of tokens": []}
    for name, buckets, grouped, count in rows:
        dynamic = None if count is None else False
        recipes, overhead, seconds, _ = run_epoch(loader(dataset, args.batch_size, buckets, grouped), dynamic)
        baseline = baseline or seconds
        shown = "-" if count is None else str(count)
        share = overhead / (1 + overhead)
        print(
            f"{name:<52} {recipes:>8} {shown:>8} {overhead:>8.1%} {share:>7.1%} {seconds * 1e3:>12.2f}"
            f" {seconds / baseline:>7.2f}x"
        )
        figure["recipes compiled"].append(recipes)
        figure["padding, % of tokens"].append(100 * share)
    plots.bars(
        "bucketing",
        f"Recipes and padding against bucketing, {args.samples} samples, batch size {args.batch_size}",
        "recipes / % padding",
        [name for name, *_ in rows],
        figure,
    )


if __name__ == "__main__":
    main()
