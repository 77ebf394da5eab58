"""Which steps the profiler records, separately for training and for evaluation (optimum-habana's
``profiling_warmup_steps``/``profiling_steps`` and their ``_eval`` pair).

Each pair ``(warmup, active)`` means: skip nothing, warm the profiler up for ``warmup`` steps of that kind, record the
next ``active`` steps, save one trace, and record nothing more of that kind.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch.profiler import ProfilerAction

from lightning_hpu.runtime import HPUConfigurationError

#: The step kinds each argument covers.
STAGE_KINDS = {
    "training_steps": ("training_step",),
    "evaluation_steps": ("validation_step", "test_step"),
}

Schedule = Callable[[int], ProfilerAction]


def check_steps(argument: str, steps: object) -> tuple[int, int] | None:
    """``steps`` as ``(warmup, active)``, or a one-sentence error naming ``argument``."""
    if steps is None:
        return None
    if (
        not isinstance(steps, (tuple, list))
        or len(steps) != 2
        or any(isinstance(n, bool) or not isinstance(n, int) for n in steps)
        or steps[0] < 0
        or steps[1] < 1
    ):
        raise HPUConfigurationError(
            f"`{argument}` must be (warmup, active): a number of steps to skip (>= 0) and of steps to record (>= 1),"
            f" e.g. {argument}=(2, 3), not {steps!r}."
        )
    return int(steps[0]), int(steps[1])


def stage_schedules(**steps: tuple[int, int] | None) -> dict[str, Schedule]:
    """The schedule of each step kind given a ``(warmup, active)`` pair (``training_steps=``, ``evaluation_steps=``).

    Lightning's schedule wrapper counts each kind's steps from 1, so ``warmup`` steps from the first one are warm-up.
    """
    schedules: dict[str, Schedule] = {}
    for argument, pair in steps.items():
        if pair is None:
            continue
        warmup, active = pair
        schedule = torch.profiler.schedule(skip_first=1, wait=0, warmup=warmup, active=active, repeat=1)
        for kind in STAGE_KINDS[argument]:
            schedules[kind] = schedule
    return schedules
