"""HPU streams and events on the stand-in: torch's own stream types, torch's stream API, the bridge's names.

Work on the stand-in is done when a call returns, so a stand-in could pass its streams off as no-ops; these tests
check what torch and the bridge promise instead: new streams are new, the current stream follows contexts per
thread and per device, events are ``torch.Event``s that record, wait and time, and the device's rules refuse host
streams, foreign devices and unknown streams.
"""

from __future__ import annotations

import threading
import time
import warnings
from typing import Any

import pytest
import torch

from tests.helpers.standin import counters, reset_backend

HPU0 = torch.device("hpu", 0)


@pytest.fixture
def two_hpus(standin: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIGHTNING_HPU_CPU_DEVICES", "2")
    reset_backend()
    torch.hpu.device_count()  # the emulated runtime reads the count again


# --- streams -----------------------------------------------------------------------------------------------------


def test_new_streams_are_torch_streams_of_the_hpu(standin: Any) -> None:
    first, second = torch.hpu.Stream(), torch.Stream(device="hpu")
    assert isinstance(first, torch.Stream) and isinstance(first, torch.hpu.Stream)
    assert first.device == HPU0 == second.device
    assert first.id() > 0 and second.stream_id > 0 and first.id() != second.stream_id, "each stream is a new one"
    same = torch.hpu.Stream(stream_id=first.id(), device_index=0, device_type=first.device_type)
    assert first != second and first == same
    assert {first: 1}[torch.Stream(stream_id=first.id(), device_index=0, device_type=first.device_type)] == 1
    assert torch.hpu.default_stream().id() == 0 and torch.hpu.Stream(is_default_stream=True).id() == 0
    assert torch.hpu.get_stream_info(first) == (HPU0, first.id())
    assert repr(first) == f"<torch.hpu.Stream device=hpu:0 hpu_stream={first.id():#x}>"
    assert first.query() and first.synchronize() is None  # the stand-in's work is done when a call returns
    assert torch.hpu.streams.Stream is torch.hpu.Stream


def test_stream_context_sets_the_current_stream_for_torch_and_the_bridge(standin: Any) -> None:
    outer, inner = torch.hpu.Stream(), torch.hpu.Stream()
    assert torch.hpu.current_stream() == torch.hpu.default_stream()
    with torch.hpu.stream(outer):
        assert torch.hpu.current_stream() == outer == torch.accelerator.current_stream()
        with torch.hpu.stream(inner):
            assert torch.accelerator.current_stream() == inner
            seen_by_other_thread: list[torch.Stream] = []
            thread = threading.Thread(target=lambda: seen_by_other_thread.append(torch.hpu.current_stream()))
            thread.start()
            thread.join()
            assert seen_by_other_thread[0].id() == 0, "the current stream is the thread's own"
        assert torch.hpu.current_stream() == outer
        with torch.hpu.stream(None):
            assert torch.hpu.current_stream() == outer
    assert torch.hpu.current_stream().id() == 0
    torch.accelerator.set_stream(inner)
    try:
        assert torch.hpu.current_stream() == inner
    finally:
        torch.hpu.set_stream(torch.hpu.default_stream())
    assert torch.accelerator.current_stream().stream_id == 0


def test_backward_runs_on_a_side_stream(standin: Any) -> None:
    weight = torch.randn(3, 3, device="hpu", requires_grad=True)
    side = torch.hpu.Stream()
    with torch.hpu.stream(side):
        (weight @ weight).sum().backward()
    assert weight.grad is not None and weight.grad.device == HPU0
    expected = torch.ones(3, 3) @ weight.detach().cpu().T + weight.detach().cpu().T @ torch.ones(3, 3)
    assert torch.allclose(weight.grad.cpu(), expected)


def test_host_streams_and_unknown_streams_are_refused(standin: Any) -> None:
    with pytest.raises(RuntimeError, match="Unknown hpu stream id"):
        torch.hpu.set_stream(torch.Stream(stream_id=10**9, device_index=0, device_type=torch.hpu.Stream().device_type))
    with pytest.raises(ValueError, match="Expected a hpu device, but got: cpu"):
        torch.hpu.Stream(device="cpu")
    with pytest.raises(ValueError, match="hpu streams only"):
        torch.hpu.Stream(stream_id=0, device_index=0, device_type=torch.Stream(device="cpu").device_type)
    with pytest.raises(TypeError, match=r"set_stream expects a torch\.hpu\.Stream"):
        torch.hpu.set_stream("hpu")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="get_stream_info expects"):
        torch.hpu.get_stream_info(torch.Stream(device="cpu"))


@pytest.mark.usefixtures("two_hpus")
def test_each_hpu_has_its_own_streams() -> None:
    on_second = torch.hpu.Stream(device="hpu:1")
    assert on_second.device == torch.device("hpu", 1)
    with torch.hpu.stream(on_second):
        assert torch.hpu.current_stream(1) == on_second and torch.hpu.current_stream(0).id() == 0
    with pytest.raises(RuntimeError, match="emulates 2 HPU"):
        torch.hpu.Stream(device="hpu:2")


# --- events ------------------------------------------------------------------------------------------------------


def test_events_are_torch_events_that_torch_streams_wait_on(standin: Any) -> None:
    side = torch.hpu.Stream()
    event = side.record_event()
    assert isinstance(event, torch.hpu.Event) and isinstance(event, torch.Event)
    # What FSDP2 does at the end of a backward: torch.accelerator's stream waits on an HPU event.
    torch.accelerator.current_stream().wait_event(event)
    torch.hpu.current_stream().wait_stream(side)
    side.wait_stream(torch.accelerator.current_stream())
    event.wait()
    assert event.query() and event.synchronize() is None
    plain = torch.Event(device="hpu")
    plain.record()
    side.wait_event(plain)
    assert plain.query()


def test_elapsed_time_measures_between_two_timing_events(standin: Any) -> None:
    start, end = torch.hpu.Event(enable_timing=True), torch.hpu.Event(enable_timing=True)
    with pytest.raises(RuntimeError, match="Both events must be recorded"):
        start.elapsed_time(end)
    start.record()
    time.sleep(0.02)
    end.record(torch.hpu.current_stream())
    assert 20.0 <= start.elapsed_time(end) < 2000.0  # milliseconds
    untimed, other = torch.hpu.Event(), torch.hpu.Event()
    untimed.record()
    other.record()
    with pytest.raises(ValueError, match="enable_timing=True"):
        untimed.elapsed_time(other)
    plain_start, plain_end = (torch.Event(device="hpu", enable_timing=True) for _ in range(2))
    plain_start.record()
    plain_end.record()
    assert plain_start.elapsed_time(plain_end) >= 0.0


def test_an_hpu_event_refuses_host_streams(standin: Any) -> None:
    event = torch.hpu.Event()
    host_stream = torch.Stream(device="cpu")
    with pytest.raises(RuntimeError, match="does not match recording stream's device type"):
        event.record(host_stream)
    event.record()
    with pytest.raises(RuntimeError, match="does not match blocking stream's device type"):
        host_stream.wait_event(event)


def test_in_lazy_mode_an_event_on_the_current_stream_marks_a_step(lazy_standin: Any) -> None:
    before = counters().mark_steps
    torch.hpu.Event().record()
    assert counters().mark_steps == before + 1, "the event follows the work issued before it, as on the bridge"
    torch.hpu.Event().record(torch.hpu.Stream())
    assert counters().mark_steps == before + 1, "recording on another stream marks no step"


@pytest.mark.usefixtures("two_hpus")
def test_an_event_stays_on_the_hpu_it_was_recorded_on() -> None:
    event = torch.hpu.Event()
    event.record(torch.hpu.Stream(device="hpu:0"))
    with pytest.raises(RuntimeError, match="does not match recording stream's device index"):
        event.record(torch.hpu.Stream(device="hpu:1"))
    torch.hpu.current_stream(1).wait_event(event)  # any device's stream may wait on it


# --- tensors and device indices ----------------------------------------------------------------------------------


def test_record_stream_takes_hpu_streams(standin: Any) -> None:
    tensor = torch.ones(4, device="hpu")
    tensor.record_stream(torch.hpu.current_stream())
    torch.hpu.record_stream(tensor, torch.hpu.Stream())
    with pytest.raises(RuntimeError, match="an hpu tensor can be recorded on an hpu stream only"):
        tensor.record_stream(torch.Stream(device="cpu"))


def test_get_device_index_reads_devices_as_the_bridge(standin: Any) -> None:
    get = torch.hpu._get_device_index
    assert get(3) == 3 and get("hpu:0") == 0 and get(torch.device("hpu", 0)) == 0
    assert get(None, optional=True) == 0 and get("hpu", optional=True) == 0
    assert get("cpu", allow_cpu=True) == -1
    with pytest.raises(ValueError, match="with a specified index"):
        get("hpu")
    with pytest.raises(ValueError, match="Expected a hpu device"):
        get("cpu")


def test_pinned_host_memory(standin: Any) -> None:
    host = torch.arange(6.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch deprecates the argument the bridge requires
        pinned = host.pin_memory(device="hpu")
        assert pinned.is_pinned(device="hpu")
    assert pinned.device.type == "cpu" and pinned.is_pinned() and not host.is_pinned()
    assert torch.equal(pinned.to("hpu", non_blocking=True).cpu(), host)
    assert not pinned.clone().is_pinned()
