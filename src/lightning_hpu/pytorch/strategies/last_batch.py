"""Ragged last training batches: a smaller last batch is a new input shape, hence one more graph compilation.

In lazy mode and with static ``torch.compile`` every new shape compiles a new graph, and the last batch of an epoch
is smaller whenever the samples per process are not a multiple of the batch size. ``last_batch`` on the HPU
strategies decides what happens: ``"pad"`` fills that batch up to full size with samples from the start of the epoch
(what optimum-habana does in lazy mode), ``"drop"`` drops it, ``"keep"`` leaves it, and ``"warn"`` (the default)
leaves it and warns once at fit start. It acts on the training loader after Lightning added its distributed
sampler, so with DDP it applies to each process's share.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sized
from typing import Any, Literal, get_args

from lightning.pytorch.strategies.strategy import Strategy
from lightning.pytorch.trainer.states import RunningStage
from lightning.pytorch.utilities.rank_zero import rank_zero_warn
from torch.utils.data import BatchSampler, DataLoader, IterableDataset, Sampler
from typing_extensions import override

LastBatch = Literal["warn", "pad", "drop", "keep"]


def check_last_batch(value: Any) -> LastBatch:
    """``value`` if it is one of the choices, else a one-sentence error."""
    choices: tuple[str, ...] = get_args(LastBatch)
    if value not in choices:
        raise ValueError(f"`last_batch={value!r}` is not a choice: use one of {', '.join(map(repr, choices))}.")
    return value


class LastBatchSampler(Sampler[list[int]]):
    """Batches of a sampler whose last, smaller batch is padded (with the epoch's first samples) or dropped."""

    def __init__(self, sampler: Iterable[int], batch_size: int, mode: Literal["pad", "drop"]) -> None:
        self.sampler = sampler
        self.batch_size = batch_size
        self.mode = mode

    def __iter__(self) -> Iterator[list[int]]:
        batch: list[int] = []
        first: list[int] = []
        for index in self.sampler:
            if len(first) < self.batch_size:
                first.append(index)
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and self.mode == "pad":
            yield batch + list(itertools.islice(itertools.cycle(first), self.batch_size - len(batch)))

    def __len__(self) -> int:
        samples = len(self.sampler)  # type: ignore[arg-type]
        full, rest = divmod(samples, self.batch_size)
        return full + (1 if rest and self.mode == "pad" else 0)

    def set_epoch(self, epoch: int) -> None:
        """Forwarded to the sampler (a ``DistributedSampler`` reshuffles per epoch)."""
        set_epoch = getattr(self.sampler, "set_epoch", None)
        if callable(set_epoch):
            set_epoch(epoch)


def ragged_remainder(dataloader: object) -> int:
    """Samples in the last batch when it is smaller than the others; 0 when batches are even or unknown."""
    batch_sampler = getattr(dataloader, "batch_sampler", None)
    if not isinstance(batch_sampler, BatchSampler) or batch_sampler.drop_last:
        return 0
    if not isinstance(batch_sampler.sampler, Sized):
        return 0
    return len(batch_sampler.sampler) % batch_sampler.batch_size


def _rebuilt(dataloader: DataLoader, mode: Literal["pad", "drop"]) -> DataLoader:
    """The same loader with its batches made by a :class:`LastBatchSampler`."""
    batch_sampler = dataloader.batch_sampler
    if type(dataloader) is not DataLoader or type(batch_sampler) is not BatchSampler:
        raise ValueError(
            f"`last_batch={mode!r}` needs a torch DataLoader made with batch_size= (got a {type(dataloader).__name__}"
            f" with a {type(batch_sampler).__name__}); drop the ragged batch in your own sampler, or use"
            " last_batch='keep'."
        )
    assert batch_sampler is not None and batch_sampler.batch_size is not None
    extra: dict[str, Any] = {}
    if dataloader.num_workers > 0:
        extra = {"prefetch_factor": dataloader.prefetch_factor, "persistent_workers": dataloader.persistent_workers}
    return DataLoader(
        dataloader.dataset,
        batch_sampler=LastBatchSampler(batch_sampler.sampler, batch_sampler.batch_size, mode),
        num_workers=dataloader.num_workers,
        collate_fn=dataloader.collate_fn,
        pin_memory=dataloader.pin_memory,
        timeout=dataloader.timeout,
        worker_init_fn=dataloader.worker_init_fn,
        multiprocessing_context=dataloader.multiprocessing_context,
        generator=dataloader.generator,
        pin_memory_device=dataloader.pin_memory_device,
        **extra,
    )


def apply_last_batch(dataloader: object, last_batch: LastBatch) -> object:
    """The training loader with ``last_batch`` applied (warning once for ``"warn"``)."""
    if last_batch == "keep" or isinstance(getattr(dataloader, "dataset", None), IterableDataset):
        return dataloader
    remainder = ragged_remainder(dataloader)
    if not remainder:
        return dataloader
    if last_batch == "warn":
        batch_size = dataloader.batch_sampler.batch_size  # type: ignore[attr-defined]
        rank_zero_warn(
            f"The training DataLoader's last batch per epoch holds {remainder} samples instead of {batch_size} on"
            " each process: a new input shape, which compiles one more graph in lazy mode or with static"
            " torch.compile. Pass last_batch='pad' (fill it from the start of the epoch) or last_batch='drop' to the"
            " HPU strategy, or last_batch='keep' to keep it without this warning."
        )
        return dataloader
    assert isinstance(dataloader, DataLoader)
    return _rebuilt(dataloader, last_batch)


class LastBatchHooks(Strategy):
    """Strategy mixin: applies :attr:`last_batch` to the training loader (mix in before the Lightning strategy)."""

    last_batch: LastBatch = "warn"

    @override
    def process_dataloader(self, dataloader: object) -> object:
        dataloader = super().process_dataloader(dataloader)
        module = self._lightning_module
        trainer = getattr(module, "_trainer", None) if module is not None else None
        if trainer is None or trainer.state.stage != RunningStage.TRAINING:
            return dataloader
        return apply_last_batch(dataloader, self.last_batch)
