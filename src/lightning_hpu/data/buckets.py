"""Bucket sizes for a variable dimension: each batch is padded up to one of a few sizes, so the device compiles a
few recipes instead of one per length.

Three rules: powers of two, a fixed step, or sizes fitted to the data set's lengths so that rounding every sample up
to its bucket adds the least padding a given number of buckets allows (an exact dynamic program over the length
histogram).
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterable, Sequence
from numbers import Integral

import torch

#: Distinct lengths the exact program works on; more are rounded up to a grid of this many steps.
_MAX_DISTINCT = 2048


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise ValueError(f"`{name}` must be a positive integer, not {value!r}.")
    return int(value)


def check_buckets(buckets: Iterable[int]) -> tuple[int, ...]:
    """``buckets`` sorted, as a tuple, or a one-sentence error if they are not distinct positive integers."""
    values = list(buckets)
    if not values or any(isinstance(b, bool) or not isinstance(b, Integral) or b < 1 for b in values):
        raise ValueError(
            f"`buckets` must be a non-empty list of positive integers, e.g. [64, 128, 256], not {values!r}."
        )
    if len(set(values)) != len(values):
        raise ValueError(f"`buckets` must not repeat a size: {values!r}.")
    return tuple(sorted(int(b) for b in values))


def power_of_two_buckets(max_length: int, min_length: int = 1) -> tuple[int, ...]:
    """Powers of two from the one at or above ``min_length`` to the one at or above ``max_length``."""
    top = _positive_int("max_length", max_length)
    low = _positive_int("min_length", min_length)
    if low > top:
        raise ValueError(f"`min_length` ({low}) must not exceed `max_length` ({top}).")
    size = 1 << (low - 1).bit_length()
    buckets = [size]
    while buckets[-1] < top:
        buckets.append(buckets[-1] * 2)
    return tuple(buckets)


def fixed_step_buckets(step: int, max_length: int) -> tuple[int, ...]:
    """``step``, ``2 * step``, ... up to the first multiple of ``step`` at or above ``max_length``."""
    width = _positive_int("step", step)
    top = _positive_int("max_length", max_length)
    return tuple(range(width, -(-top // width) * width + 1, width))


def fitted_buckets(lengths: Iterable[int], num_buckets: int) -> tuple[int, ...]:
    """At most ``num_buckets`` sizes that minimise the padding of rounding every length up to its bucket.

    The largest bucket is the longest length; the others are lengths of the data set chosen by an exact dynamic
    program over its length histogram (``O(num_buckets * distinct_lengths**2)``, vectorised). Beyond 2048 distinct
    lengths (audio samples, say) the lengths are first rounded up to a grid of 2048 steps, so the buckets are then
    multiples of that step and the least padding only up to one step per sample.
    """
    count = _positive_int("num_buckets", num_buckets)
    histogram = Counter(_positive_int("lengths", int(length)) for length in lengths)
    if not histogram:
        raise ValueError("`lengths` is empty: pass the length of every sample of the data set.")
    if len(histogram) > _MAX_DISTINCT:
        # Lengths rounded up to a coarser grid: the program stays fast, the buckets still hold every length.
        step = -(-max(histogram) // _MAX_DISTINCT)
        coarse: Counter[int] = Counter()
        for length, samples in histogram.items():
            coarse[-(-length // step) * step] += samples
        histogram = coarse
    values = torch.tensor(sorted(histogram), dtype=torch.float64)
    weights = torch.tensor([histogram[int(v)] for v in values.tolist()], dtype=torch.float64)
    if count >= len(values):
        return tuple(int(v) for v in values.tolist())
    zero = torch.zeros(1, dtype=torch.float64)
    # cum_n[j], cum_s[j]: samples and summed lengths of the j shortest distinct lengths.
    cum_n = torch.cat((zero, torch.cumsum(weights, 0)))
    cum_s = torch.cat((zero, torch.cumsum(weights * values, 0)))
    distinct = len(values)
    # best[j]: least padding of the j+1 shortest lengths with the buckets used so far, the last one at values[j].
    best = values * cum_n[1:] - cum_s[1:]  # one bucket
    choices: list[list[int]] = []
    for _ in range(count - 1):
        new = best.clone()
        choice = [-1] * distinct
        for j in range(1, distinct):
            # The last bucket covers lengths i+1..j; the buckets before cover 0..i.
            cost = best[:j] + values[j] * (cum_n[j + 1] - cum_n[1 : j + 1]) - (cum_s[j + 1] - cum_s[1 : j + 1])
            k = int(torch.argmin(cost))
            if cost[k] < new[j]:
                new[j], choice[j] = cost[k], k
        choices.append(choice)
        best = new
    buckets = [distinct - 1]
    for choice in reversed(choices):
        previous = choice[buckets[-1]]
        if previous >= 0:
            buckets.append(previous)
    return tuple(sorted(int(values[j]) for j in set(buckets)))


def bucket_for(length: int, buckets: Sequence[int]) -> int:
    """The smallest bucket that holds ``length`` (``buckets`` sorted), or a one-sentence error."""
    index = bisect.bisect_left(buckets, length)
    if index == len(buckets):
        raise ValueError(
            f"A length of {length} exceeds the largest bucket ({buckets[-1]}): add a bucket of at least {length}"
            " or truncate the samples."
        )
    return buckets[index]


def padding_overhead(lengths: Iterable[int], buckets: Sequence[int]) -> float:
    """Padding positions per real position when every sample is rounded up to its own bucket (0.10 = 10%)."""
    ordered = check_buckets(buckets)
    real = padded = 0
    for length in lengths:
        real += length
        padded += bucket_for(length, ordered)
    return (padded - real) / real if real else 0.0
