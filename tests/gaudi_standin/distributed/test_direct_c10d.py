"""A ``torch.ops.c10d`` collective called directly on ``hpu`` tensors, asynchronously, returns correct values even
when its caller drops the tensors at once and the allocator hands their memory to the next tensor.

Such a call reaches the stand-in's device fallback, whose host views of the ``hpu`` tensors now keep the device
memory alive for as long as gloo holds them (``scenarios/direct_c10d_scenario.py`` says how it is provoked).
"""

from __future__ import annotations

from tests.helpers.processes import run_until_ok


def test_direct_async_c10d_ops_on_dropped_hpu_tensors_return_correct_values(python_executable: str) -> None:
    run_until_ok(python_executable, "direct_c10d_scenario.py", "1000")
