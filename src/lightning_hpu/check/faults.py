"""The test suite's fault injection: ``LIGHTNING_HPU_TEST_CHECK_FAULT=<row>[,<row>...]`` breaks those rows' checks.

Only the tests use it: each named row's check is broken the way a broken node would break it (a learning rate of
zero, so the loss does not fall; a forced wrong loss; a rank with different weights; a recompile after the warm-up;
a corrupted checkpoint; ...), so the test sees the row fail and the command exit non-zero. The forced losses differ
from one another, so faults injected together never cancel. The variable is under the ``LIGHTNING_HPU_TEST_`` prefix
the environment report leaves alone; the workers inherit it.
"""

from __future__ import annotations

import os

FAULT_ENV = "LIGHTNING_HPU_TEST_CHECK_FAULT"

#: Every row a fault can break, with how it is broken.
FAULTS = {
    "devices": "the environment report gets an error",
    "fit.eager": "the eager fit trains with a learning rate of zero: its loss does not fall",
    "fit.compile": "the compiled fit trains with a learning rate of zero: its loss does not fall",
    "fit.recompiles": "the compiled model reads a Python number that changes after the warm-up: a recompile then",
    "fit.lazy": "the lazy-mode fit trains with a learning rate of zero: its loss does not fall",
    "fit.modes": "the compiled fit's loss is forced 25% high: it differs from eager mode's",
    "precision.bf16": "the bf16-mixed fit's loss is forced 50% high: it differs from fp32's",
    "precision.fp8": "the fp8 fit's loss is forced 100% high: it differs from bf16-mixed's",
    "multi.ddp": "rank 1's weights are changed after the fit",
    "multi.allreduce": "rank 1 adds one to what it reduces: the sum is wrong",
    "multi.fsdp2": "the FSDP2 step runs with a learning rate of zero: no weight changes",
    "multi.deepspeed": "rank 1's weights are changed after the ZeRO-2 fit",
    "throughput": "the model's FLOPs are overstated a millionfold: MFU above 100%",
    "checkpoints.resume": "a weight of the saved checkpoint is changed before the resume",
    "checkpoints.async": "the asynchronously written checkpoint is truncated before it is read back",
    "memory": "the device's total is taken as half the fit's peak",
}


def injected() -> set[str]:
    """The rows whose fault the environment asks for (unknown names are refused in one sentence)."""
    names = {name.strip() for name in os.environ.get(FAULT_ENV, "").split(",") if name.strip()}
    unknown = sorted(names - set(FAULTS))
    if unknown:
        raise ValueError(f"{FAULT_ENV} names unknown row(s) {unknown}; choose from {sorted(FAULTS)}.")
    return names


def fault(row: str) -> bool:
    """Whether the test suite asked to break ``row``'s check."""
    return row in injected()
