"""Shape bucketing (``lightning_hpu.data``): bucket rules, padding and masks, grouping, recipes counted, DDP."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
import torch
from torch.utils.data import BatchSampler, RandomSampler, SequentialSampler

from lightning_hpu import HPUCompile, HPURecompileMonitor
from lightning_hpu.data import (
    IGNORE_INDEX,
    BucketPadCollate,
    LengthGroupedBatchSampler,
    bucket_for,
    fitted_buckets,
    fixed_step_buckets,
    padding_overhead,
    power_of_two_buckets,
)
from tests.helpers.bucketing_model import BucketedTokenModel, sample_lengths
from tests.helpers.dynamo import reset_dynamo
from tests.helpers.standin import counters as standin_counters
from tests.helpers.trainer import quiet_trainer
from tests.helpers.two_device_run import TwoDeviceRun


def test_power_of_two_and_fixed_step_rules() -> None:
    assert power_of_two_buckets(100) == (1, 2, 4, 8, 16, 32, 64, 128)
    assert power_of_two_buckets(100, min_length=20) == (32, 64, 128)
    assert power_of_two_buckets(64, min_length=64) == (64,)
    assert fixed_step_buckets(32, 100) == (32, 64, 96, 128)
    assert fixed_step_buckets(32, 96) == (32, 64, 96)


def test_fitted_buckets_are_the_least_padding_choice() -> None:
    lengths = [3, 3, 5, 7, 7, 7, 10, 12, 20, 20, 31, 4, 9, 9]
    for count in (1, 2, 3, 4):
        fitted = fitted_buckets(lengths, count)
        assert len(fitted) <= count and fitted[-1] == max(lengths)
        inner = sorted(set(lengths) - {max(lengths)})
        best = min(
            padding_overhead(lengths, (*chosen, max(lengths)))
            for k in range(count)
            for chosen in itertools.combinations(inner, k)
        )
        assert padding_overhead(lengths, fitted) == pytest.approx(best)
    assert fitted_buckets(lengths, 100) == tuple(sorted(set(lengths)))


def test_fitted_buckets_bound_padding_on_a_long_tailed_distribution() -> None:
    generator = torch.Generator().manual_seed(0)
    # 64 tokens plus a Pareto(2.5) tail, as in benchmarks/bucketing.py.
    tail = torch.empty(4096).exponential_(2.5, generator=generator).exp() - 1
    lengths = (64 * (1 + tail)).clamp(max=1024).long().tolist()
    fitted = fitted_buckets(lengths, 8)
    assert len(fitted) == 8
    assert padding_overhead(lengths, fitted) <= 0.15
    assert padding_overhead(lengths, fitted) < padding_overhead(lengths, power_of_two_buckets(1024, 64))


def test_fitted_buckets_on_many_distinct_lengths_hold_every_length() -> None:
    lengths = torch.randint(1, 200_000, (5000,), generator=torch.Generator().manual_seed(0)).tolist()
    fitted = fitted_buckets(lengths, 8)
    assert len(fitted) == 8 and fitted[-1] >= max(lengths)
    assert padding_overhead(lengths, fitted) < padding_overhead(lengths, fixed_step_buckets(25_000, 200_000))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: fitted_buckets([], 4), "`lengths` is empty"),
        (lambda: fitted_buckets([3, 4], 0), "`num_buckets` must be a positive integer"),
        (lambda: power_of_two_buckets(8, min_length=16), "`min_length` \\(16\\) must not exceed"),
        (lambda: BucketPadCollate([8, 8], {"x": 0}), "must not repeat"),
        (lambda: BucketPadCollate([8], {}), "`padding_values` must name the fields"),
        (lambda: bucket_for(40, (8, 16, 32)), "A length of 40 exceeds the largest bucket \\(32\\)"),
    ],
)
def test_bad_input_is_refused_with_one_sentence(call: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()


def test_collate_pads_to_the_bucket_with_a_mask_and_ignored_labels() -> None:
    collate = BucketPadCollate([4, 8, 16], padding_values={"input_ids": 0, "labels": IGNORE_INDEX})
    samples = [
        {"input_ids": torch.tensor([5, 6, 7]), "labels": torch.tensor([6, 7, 8]), "id": 0},
        {"input_ids": torch.tensor([1, 2, 3, 4, 5]), "labels": torch.tensor([2, 3, 4, 5, 6]), "id": 1},
    ]
    batch = collate(samples)
    assert batch["input_ids"].tolist() == [[5, 6, 7, 0, 0, 0, 0, 0], [1, 2, 3, 4, 5, 0, 0, 0]]
    assert batch["labels"].tolist() == [[6, 7, 8] + [IGNORE_INDEX] * 5, [2, 3, 4, 5, 6] + [IGNORE_INDEX] * 3]
    assert batch["attention_mask"].tolist() == [[1, 1, 1, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 0, 0, 0]]
    assert batch["id"].tolist() == [0, 1]


def test_collate_pads_tuples_along_a_chosen_dim() -> None:
    collate = BucketPadCollate([2, 4], padding_values={0: -1.0}, dim=0)
    features = [torch.ones(1, 3), torch.ones(3, 3)]  # e.g. boxes: (number of boxes, 3)
    x, label, mask = collate([(features[0], 1), (features[1], 0)])
    assert x.shape == (2, 4, 3) and label.tolist() == [1, 0]
    assert x[0, 1:].eq(-1).all() and x[1, 3:].eq(-1).all() and x[1, :3].eq(1).all()
    assert mask.tolist() == [[1, 0, 0, 0], [1, 1, 1, 0]]


def test_collate_refuses_fields_of_different_lengths() -> None:
    collate = BucketPadCollate([8], padding_values={"a": 0, "b": 0})
    with pytest.raises(ValueError, match="Field 'b' has other lengths"):
        collate([{"a": torch.ones(3), "b": torch.ones(4)}])


def test_grouped_batches_are_a_batch_sampler_s_batches_regrouped() -> None:
    lengths = sample_lengths(50)
    for drop_last in (False, True):
        plain = list(BatchSampler(SequentialSampler(range(50)), 4, drop_last))
        grouped = list(LengthGroupedBatchSampler(SequentialSampler(range(50)), 4, drop_last, lengths, window=5))
        assert [len(b) for b in grouped] == [len(b) for b in plain]
        assert sorted(i for b in grouped for i in b) == sorted(i for b in plain for i in b)
    # Within a window, each batch holds neighbouring lengths: padding to the batch's longest is far smaller.
    sampler = RandomSampler(range(50), generator=torch.Generator().manual_seed(0))
    grouped = list(LengthGroupedBatchSampler(sampler, 4, True, lengths, window=100))
    random = list(BatchSampler(sampler, 4, True))

    def padding(batches: list[list[int]]) -> int:
        return sum(len(b) * max(lengths[i] for i in b) - sum(lengths[i] for i in b) for b in batches)

    assert padding(grouped) < padding(random) / 3


def _fit_compiled(tmp_path: Any, buckets: list[int], grouped: bool) -> tuple[BucketedTokenModel, int, int]:
    """Fit one epoch compiled with hpu_backend (one static graph per shape); (model, recipes, monitor's total)."""

    reset_dynamo()
    counters = standin_counters()
    before = counters.compiled_recipes
    model = BucketedTokenModel(buckets, grouped=grouped)
    monitor = HPURecompileMonitor(warmup_steps=100)
    trainer = quiet_trainer(
        tmp_path,
        accelerator="hpu",
        max_epochs=1,
        enable_checkpointing=False,
        callbacks=[HPUCompile(dynamic=False), monitor],
    )
    trainer.fit(model)
    return model, counters.compiled_recipes - before, monitor.total


def test_bucketing_bounds_recipes_and_masks_the_loss(standin: Any, tmp_path: Any, monkeypatch: Any) -> None:
    monkeypatch.setattr(torch._dynamo.config, "recompile_limit", 64)
    buckets = [8, 16, 32]
    model, recipes, monitored = _fit_compiled(tmp_path, buckets, grouped=False)
    shapes = {tuple(step["shape"]) for step in model.seen}
    assert {s[1] for s in shapes} <= set(buckets)
    assert 0 < recipes <= len(buckets) * 2  # batch sizes 4 and the last (ragged) batch's
    assert recipes == len(shapes) and monitored == recipes
    assert max(step["loss_diff"] for step in model.seen) < 1e-5
    # Without buckets (every length its own size), the same epoch compiles a recipe per distinct longest length.
    every = sorted(set(model.lengths))
    unbucketed, unbucketed_recipes, _ = _fit_compiled(tmp_path, every, grouped=False)
    assert unbucketed_recipes == len({tuple(step["shape"]) for step in unbucketed.seen}) > recipes


def test_ddp_ranks_get_bucketed_grouped_disjoint_batches_with_masked_loss(two_device_run: TwoDeviceRun) -> None:
    reports = two_device_run.reports("bucketing")  # bucketing_ddp_scenario.py, in the session's two-rank launch
    lengths = sample_lengths()
    indices = [[i for step in report["seen"] for i in step["indices"]] for report in reports]
    # Lightning's DistributedSampler went inside the batch sampler: the ranks share the data set, without overlap.
    assert not set(indices[0]) & set(indices[1])
    assert set(indices[0]) | set(indices[1]) == set(range(len(lengths)))
    for report in reports:
        for step in report["seen"]:
            assert step["shape"][1] in (8, 16, 32)
            assert step["shape"][1] == bucket_for(max(lengths[i] for i in step["indices"]), (8, 16, 32))
            assert step["lengths"] == [lengths[i] for i in step["indices"]]
            assert step["loss_diff"] < 1e-5
