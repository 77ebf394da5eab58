"""Data-side helpers for Gaudi: pad variable lengths to a few bucket sizes, so a few graph recipes serve an epoch.

Imports (the layering test checks this paragraph): no Lightning package (Lightning-free, with all it imports);
nothing of this package.
"""

from lightning_hpu.data.buckets import (
    bucket_for,
    fitted_buckets,
    fixed_step_buckets,
    padding_overhead,
    power_of_two_buckets,
)
from lightning_hpu.data.collate import IGNORE_INDEX, BucketPadCollate
from lightning_hpu.data.grouping import LengthGroupedBatchSampler

__all__ = [
    "IGNORE_INDEX",
    "BucketPadCollate",
    "LengthGroupedBatchSampler",
    "bucket_for",
    "fitted_buckets",
    "fixed_step_buckets",
    "padding_overhead",
    "power_of_two_buckets",
]
