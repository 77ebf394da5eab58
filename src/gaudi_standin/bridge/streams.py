"""Streams and events of the stand-in's ``hpu`` (``torch.hpu.Stream``, ``Event``, ``current_stream``, ``stream``).

Every op of the stand-in runs synchronously on the host, so there is one stream per device and everything recorded
is already complete: waits return at once and events time the host. FSDP, DeepSpeed and scripts written for a Gaudi
call this API to overlap communication and compute; here it keeps their code paths running.
"""

from __future__ import annotations

import time
from types import TracebackType
from typing import Any

import torch

__all__ = ["Event", "Stream", "current_stream", "default_stream", "stream"]


def _device(device: Any) -> torch.device:
    if isinstance(device, int):
        return torch.device("hpu", device)
    if device is None:
        return torch.device("hpu", torch.ops.lightning_hpu_standin.current_device())
    parsed = torch.device(device)
    if parsed.index is None:
        return torch.device("hpu", torch.ops.lightning_hpu_standin.current_device())
    return parsed


class Event:
    """A point in a stream's work; on the stand-in it is reached when it is recorded."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> None:
        self.enable_timing = enable_timing
        self._recorded_at: float | None = None

    def record(self, stream: Stream | None = None) -> None:
        self._recorded_at = time.perf_counter()

    def wait(self, stream: Stream | None = None) -> None:
        """Make ``stream`` wait for this event (nothing to wait for on the stand-in)."""

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        """Wait for the event (it is complete once recorded)."""

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds from this event to ``end_event`` (both recorded)."""
        if self._recorded_at is None or end_event._recorded_at is None:
            raise RuntimeError("elapsed_time needs both events recorded: call record() on each first.")
        return (end_event._recorded_at - self._recorded_at) * 1000.0


class Stream:
    """An ``hpu`` stream: the device's one stream, since the stand-in runs every op at once."""

    def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any) -> None:
        self.device = _device(device)
        self.priority = priority

    def wait_stream(self, stream: Stream) -> None:
        """Order this stream after ``stream`` (already so on the stand-in)."""

    def wait_event(self, event: Event) -> None:
        """Order this stream after ``event`` (already so on the stand-in)."""

    def record_event(self, event: Event | None = None) -> Event:
        event = event if event is not None else Event()
        event.record(self)
        return event

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        """Wait for the stream's work (done already)."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream) and other.device == self.device

    def __hash__(self) -> int:
        return hash(("hpu-stream", self.device))

    def __repr__(self) -> str:
        return f"Stream(device={self.device})"


def current_stream(device: Any = None) -> Stream:
    """The stream ops on ``device`` run on."""
    return Stream(device)


def default_stream(device: Any = None) -> Stream:
    """The device's default stream (the only one)."""
    return Stream(device)


class stream:
    """Run the block on ``stream`` (``with torch.hpu.stream(s):``); the stand-in has one stream per device."""

    def __init__(self, stream: Stream | None) -> None:
        self.stream = stream

    def __enter__(self) -> Stream | None:
        return self.stream

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        return None
