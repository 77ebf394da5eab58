"""HPUCompile with DDP and fast DDP on two stand-in HPUs: ``compile_scenario.py`` in the session's two-rank launch."""

from __future__ import annotations

import pytest

from tests.helpers.two_device_run import TwoDeviceRun


@pytest.mark.multiprocess
def test_regional_compile_with_ddp_fast_ddp_bf16_accumulation_and_last_batch(two_device_run: TwoDeviceRun) -> None:
    for report in two_device_run.reports("compile"):
        pad, drop = report["ddp_pad"], report["fast_drop"]
        # Each rank's 10 samples in batches of 4: padded to 3 full batches, or cut to 2, every epoch.
        assert pad["batch_sizes"] == [4, 4, 4] * 2
        assert drop["batch_sizes"] == [4, 4] * 2
        for scenario in (pad, drop):
            assert scenario["compiled_graphs"] > 0
            assert scenario["max_diff_between_ranks"] == 0.0
        assert pad["global_step"] == 4 and drop["global_step"] == 2  # 2 batches per step; an epoch end steps too
        assert pad["per_step"][0] > 0 and sum(pad["per_step"][2:]) == 0  # fixed shapes: no compiling after warm-up
