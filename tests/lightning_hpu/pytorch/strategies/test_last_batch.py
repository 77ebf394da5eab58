"""``last_batch=`` on the HPU strategies: a ragged last training batch padded, dropped, kept, or warned about."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
import torch
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from lightning_hpu import HPUParallelStrategy, SingleHPUStrategy
from lightning_hpu.pytorch.strategies.last_batch import LastBatchSampler
from tests.helpers.models import RegressionModel
from tests.helpers.trainer import quiet_trainer


class RaggedModel(RegressionModel):
    """20 samples in batches of 8: the last batch of each epoch holds 4, unless the strategy changes it."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[torch.Tensor] = []
        self.val_sizes: list[int] = []

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        self.batches.append(batch[0].detach().clone())
        return super().training_step(batch, batch_idx)

    def validation_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        self.val_sizes.append(batch[0].shape[0])
        return super().validation_step(batch, batch_idx)

    def train_dataloader(self) -> DataLoader:
        x = torch.arange(20, dtype=torch.float32).unsqueeze(1).repeat(1, 8)
        return DataLoader(TensorDataset(x, x[:, :1]), batch_size=8)

    def val_dataloader(self) -> DataLoader:
        x = torch.randn(20, 8)
        return DataLoader(TensorDataset(x, x[:, :1]), batch_size=8)


def _fit(tmp_path: Any, last_batch: str) -> tuple[RaggedModel, list[str]]:
    model = RaggedModel()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer = quiet_trainer(
            tmp_path, accelerator="hpu", strategy=SingleHPUStrategy(last_batch=last_batch), max_epochs=2
        )
        trainer.fit(model)
    return model, [str(w.message) for w in caught if "last batch" in str(w.message)]


def test_pad_fills_the_last_batch_from_the_start_of_the_epoch(standin: Any, tmp_path: Any) -> None:
    model, warned = _fit(tmp_path, "pad")
    assert [len(b) for b in model.batches] == [8, 8, 8] * 2
    assert model.batches[2][:, 0].tolist() == [16, 17, 18, 19, 0, 1, 2, 3]
    assert not warned
    assert 4 in model.val_sizes  # evaluation loaders are left alone


def test_drop_drops_the_last_batch(standin: Any, tmp_path: Any) -> None:
    model, warned = _fit(tmp_path, "drop")
    assert [len(b) for b in model.batches] == [8, 8] * 2
    assert not warned


@pytest.mark.parametrize(("last_batch", "warnings_expected"), [("warn", 1), ("keep", 0)])
def test_warn_and_keep_leave_the_batch(standin: Any, tmp_path: Any, last_batch: str, warnings_expected: int) -> None:
    model, warned = _fit(tmp_path, last_batch)
    assert [len(b) for b in model.batches] == [8, 8, 4] * 2
    assert len(warned) == warnings_expected
    if warned:
        assert "last_batch='pad'" in warned[0] and "last_batch='drop'" in warned[0]


def test_even_batches_do_not_warn(standin: Any, tmp_path: Any) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        quiet_trainer(tmp_path, accelerator="hpu", max_steps=2).fit(RegressionModel())
    assert not [w for w in caught if "last batch" in str(w.message)]


def test_bad_value_is_refused(standin: Any) -> None:
    with pytest.raises(ValueError, match="last_batch='fill'"):
        SingleHPUStrategy(last_batch="fill")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="last_batch='x'"):
        HPUParallelStrategy(last_batch="x")  # type: ignore[arg-type]


def test_padding_is_per_rank_under_a_distributed_sampler() -> None:
    """Each rank's share (10 of 20 samples) is padded on its own, from that rank's first samples."""
    batches = {}
    for rank in (0, 1):
        sampler = DistributedSampler(range(20), num_replicas=2, rank=rank, shuffle=False)
        batches[rank] = list(LastBatchSampler(sampler, 4, "pad"))
        assert len(LastBatchSampler(sampler, 4, "pad")) == 3 and len(LastBatchSampler(sampler, 4, "drop")) == 2
    assert batches[0] == [[0, 2, 4, 6], [8, 10, 12, 14], [16, 18, 0, 2]]
    assert batches[1] == [[1, 3, 5, 7], [9, 11, 13, 15], [17, 19, 1, 3]]
