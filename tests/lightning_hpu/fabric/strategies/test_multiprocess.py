"""Fabric on two stand-in HPUs: fast DDP and DeepSpeed, ``fabric_scenario.py`` in the session's two-rank launch.

Every rank's report is checked: identical weights on both ranks, equal to a single-process run over the same global
batches; fast DDP reduces once per optimizer step and never inside ``fabric.no_backward_sync``, with gradients
global before ``fabric.clip_gradients``; ``strategy="deepspeed"`` is the HPU DeepSpeed strategy and
``fabric.save``/``fabric.load`` restore the run exactly.
"""

from __future__ import annotations

import subprocess

import pytest

from tests.helpers.data_parallel import STEPS
from tests.helpers.paths import EXAMPLES
from tests.helpers.processes import scenario_environment
from tests.helpers.two_device_run import TwoDeviceRun

pytest.importorskip("deepspeed")


@pytest.mark.multiprocess
def test_fabric_fast_ddp_and_deepspeed_on_two_devices(two_device_run: TwoDeviceRun) -> None:
    for report in two_device_run.reports("fabric"):
        assert report["fast_strategy"] == ["HPUParallelStrategy", True]
        for name in ("fast_accumulate_clip", "fast_plain"):
            fast = report[name]
            assert fast["wrapped"] == "Sequential", "fast DDP does not wrap the model in DistributedDataParallel"
            assert fast["max_diff_between_ranks"] == 0.0, name
            assert fast["max_diff_to_reference"] < 1e-5, name
            assert fast["gradient_reduces"] == STEPS, "one gradient all-reduce per optimizer step"
            assert fast["reduces_inside_no_sync"] == 0
        assert report["deepspeed_strategy"] == [
            two_device_run.package("lightning_hpu.fabric.strategies.deepspeed"),
            "HPUDeepSpeedStrategy",
        ]
        deepspeed = report["deepspeed"]
        assert deepspeed["engine"] == "DeepSpeedEngine"
        assert deepspeed["max_diff_between_ranks"] == 0.0
        assert deepspeed["max_diff_to_reference"] < 1e-5
        assert deepspeed["checkpoint_is_deepspeed_dir"]
        assert deepspeed["restored_step"] == STEPS - 1
        assert deepspeed["restored_diff_to_saved"] < 1e-5
        assert deepspeed["repeat_diff"] == 0.0, "the step after loading repeats the step after saving exactly"
        assert report["process_group_backend"] == "hccl"


@pytest.mark.multiprocess
def test_fabric_example_trains_with_a_deepspeed_name_on_two_devices(python_executable: str) -> None:
    env = scenario_environment(LIGHTNING_HPU_BACKEND="cpu", LIGHTNING_HPU_CPU_DEVICES="2")
    example = EXAMPLES / "fabric_hpu.py"
    arguments = ["--devices", "2", "--steps", "8", "--strategy", "deepspeed_stage_2"]
    result = subprocess.run(
        [python_executable, str(example), *arguments], env=env, capture_output=True, text=True, timeout=400
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    line = [line for line in result.stdout.splitlines() if "HPUs: loss" in line][-1]
    assert line.startswith("HPUDeepSpeedStrategy on 2 HPUs")
    first, last = (float(value) for value in line.split("loss ")[1].split(" -> "))
    assert last < first
