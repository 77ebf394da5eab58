"""``BucketPadCollate``: pad each batch's variable dimension up to a bucket size, with a mask, for any DataLoader.

On a Gaudi every new input shape is a new graph recipe (seconds to minutes of compilation). Padding each batch to
the longest sample in it (dynamic padding) gives one shape per distinct longest length; padding to one of a few
bucket sizes bounds the shapes, hence the recipes, by the number of buckets. Padded positions get a padding value
per field: ``0`` for token ids, ``IGNORE_INDEX`` (-100) for labels, so ``cross_entropy``'s default ``ignore_index``
leaves them out of the loss, and the mask (1 for real positions, 0 for padding) lets attention and pooling skip them.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any

import torch
from torch.utils.data import default_collate

from lightning_hpu.data.buckets import bucket_for, check_buckets

#: The label value ``torch.nn.functional.cross_entropy`` ignores by default.
IGNORE_INDEX = -100


class BucketPadCollate:
    """A ``collate_fn`` that pads the fields named in ``padding_values`` along ``dim`` to the batch's bucket.

    The batch's bucket is the smallest of ``buckets`` that holds its longest sample. Samples are mappings (padded by
    key, like Hugging Face features) or tuples/lists (padded by position); fields not named in ``padding_values``
    are collated as they are (``default_collate``). The mask is added under ``mask_key`` for mappings and appended
    as the last element for tuples. Because it only changes how a batch is assembled, it works with any
    ``DataLoader``, sampler and batch sampler, Lightning's ``DistributedSampler`` under DDP included.

    Args:
        buckets: the sizes the variable dimension may take (see :mod:`lightning_hpu.data.buckets` for rules).
        padding_values: the fields to pad and their padding value, e.g. ``{"input_ids": 0, "labels": IGNORE_INDEX}``
            or ``{0: 0, 1: IGNORE_INDEX}`` for ``(tokens, labels)`` tuples. Every named field of a sample must have
            the same size along ``dim``: the sample's length.
        dim: the variable dimension of each sample's fields (before batching).
        mask_key: the key of the mask in mapping batches; ``None`` adds no mask.
        mask_dtype: the mask's dtype.
    """

    def __init__(
        self,
        buckets: Iterable[int],
        padding_values: Mapping[Hashable, float | int],
        dim: int = 0,
        mask_key: str | None = "attention_mask",
        mask_dtype: torch.dtype = torch.long,
    ) -> None:
        self.buckets = check_buckets(buckets)
        if not padding_values:
            raise ValueError(
                "`padding_values` must name the fields to pad, e.g. {'input_ids': 0, 'labels': IGNORE_INDEX}."
            )
        self.padding_values = dict(padding_values)
        self.dim = dim
        self.mask_key = mask_key
        self.mask_dtype = mask_dtype

    def __call__(self, samples: Sequence[Any]) -> Any:
        if not samples:
            raise ValueError("BucketPadCollate got an empty batch.")
        first = samples[0]
        if isinstance(first, Mapping):
            fields = {key: [sample[key] for sample in samples] for key in first}
        elif isinstance(first, (tuple, list)):
            fields = {index: [sample[index] for sample in samples] for index in range(len(first))}
        else:
            raise TypeError(
                f"BucketPadCollate pads mappings or tuples of tensors, not {type(first).__name__}; wrap each sample"
                " as a dict such as {'input_ids': tensor} or a tuple."
            )
        missing = [key for key in self.padding_values if key not in fields]
        if missing:
            raise KeyError(f"`padding_values` names field(s) {missing} that the samples do not have ({list(fields)}).")
        lengths = self._lengths(fields)
        size = bucket_for(max(lengths), self.buckets)
        batch: dict[Hashable, Any] = {}
        for key, values in fields.items():
            if key in self.padding_values:
                batch[key] = self._pad(values, size, self.padding_values[key])
            else:
                batch[key] = default_collate(values)
        mask = torch.zeros(len(samples), size, dtype=self.mask_dtype)
        for row, length in enumerate(lengths):
            mask[row, :length] = 1
        if isinstance(first, Mapping):
            if self.mask_key is not None:
                batch[self.mask_key] = mask
            return batch
        ordered = [batch[index] for index in range(len(first))]
        return (*ordered, mask) if self.mask_key is not None else tuple(ordered)

    def _lengths(self, fields: Mapping[Hashable, list[Any]]) -> list[int]:
        lengths: list[int] | None = None
        for key in self.padding_values:
            sizes = [torch.as_tensor(value).shape[self.dim] for value in fields[key]]
            if lengths is not None and sizes != lengths:
                raise ValueError(
                    f"Field {key!r} has other lengths along dim {self.dim} than the other padded fields; every field"
                    " named in `padding_values` must have the sample's length."
                )
            lengths = sizes
        assert lengths is not None
        return lengths

    def _pad(self, values: list[Any], size: int, value: float | int) -> torch.Tensor:
        tensors = [torch.as_tensor(v) for v in values]
        first = tensors[0]
        dim = self.dim % first.dim()
        shape = list(first.shape)
        shape[dim] = size
        out = torch.full((len(tensors), *shape), value, dtype=first.dtype)
        for row, tensor in enumerate(tensors):
            out[row].narrow(dim, 0, tensor.shape[dim]).copy_(tensor)
        return out
