"""FSDP2 on 2 stand-in HPUs through its streams and events, on the Trainer and on Fabric (``stream_scenario.py``).

The scenarios run in the session's two-rank launch (``two_device_run.py``); this test checks what each rank reports.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers.two_device_run import TwoDeviceRun

HPU_EVENT = "Event (torch.Event: True)"


def _check_rank(report: dict[str, Any]) -> None:
    for name in ("trainer_fsdp2_frozen", "fabric_fsdp2_frozen"):
        scenario = report[name]
        assert scenario["strategy"] == "HPUModelParallelStrategy", name
        assert scenario["mesh"] == {"data_parallel": 2, "tensor_parallel": 1}, name
        assert scenario["max_diff_to_reference"] < 1e-5, name
        # Every step's backward ended by waiting, through torch.accelerator's stream, on an HPU event of torch's type.
        assert scenario["unconsumed_all_gather_waits"] == 3, name
        assert scenario["event_types"] == [HPU_EVENT], name
        assert scenario["current_stream_after"] == 0, "FSDP2 must leave the default stream current"

    data_times_tensor = report["trainer_2d"]
    assert data_times_tensor["mesh"] == {"data_parallel": 1, "tensor_parallel": 2}
    assert data_times_tensor["max_diff_to_reference"] < 1e-5
    assert data_times_tensor["current_stream_after"] == 0


@pytest.mark.multiprocess
def test_fsdp2_trains_through_hpu_streams_and_events_on_two_standin_devices(two_device_run: TwoDeviceRun) -> None:
    for report in two_device_run.reports("streams"):
        _check_rank(report)
