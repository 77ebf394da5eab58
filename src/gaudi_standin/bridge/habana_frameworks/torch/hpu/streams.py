"""``habana_frameworks.torch.hpu.streams`` on the stand-in: ``torch.hpu.Stream``, ``stream``, ``current_stream``, ...

As in the bridge, ``torch.hpu.Stream`` is a ``torch.Stream`` of the ``hpu`` device: each one created is a new
device stream with its own id, a thread has a current stream per HPU (the default stream, id 0, until it sets
another with :func:`set_stream` or ``with torch.hpu.stream(s):``), and torch's own stream API (``torch.Stream``,
``torch.accelerator``, ``tensor.record_stream``) works on the same streams. FSDP2, DeepSpeed and scripts written for
a Gaudi use them to overlap communication and compute. The stand-in runs every op synchronously on the host, so
work on any stream is complete when it returns: waits return at once, queries say done, and events time the host.
"""

from __future__ import annotations

import functools
from types import TracebackType
from typing import TYPE_CHECKING, Any

import torch

from gaudi_standin.bridge.habana_frameworks.torch.hpu._utils import _get_device_index
from gaudi_standin.bridge.habana_frameworks.torch.hpu.events import Event

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = [
    "Stream",
    "StreamContext",
    "current_stream",
    "default_stream",
    "get_stream_info",
    "record_stream",
    "set_stream",
    "stream",
]


def _ops() -> Any:
    return torch.ops.lightning_hpu_standin


@functools.cache
def _hpu_device_type() -> int:
    """torch's number of the HPU device type, as ``torch.Stream.device_type`` holds it."""
    return int(_ops().default_stream(0).device_type)


class Stream(torch.Stream):
    """A stream of an HPU: ``torch.hpu.Stream(device=None, priority=0)`` creates a new one on ``device``.

    ``torch.hpu.Stream(stream_id=..., device_index=..., device_type=...)`` wraps an existing one (what
    :func:`current_stream` returns). HPU streams have one priority: ``priority`` is accepted and not used.
    """

    def __new__(cls, device: Any = None, priority: int = 0, **kwargs: Any) -> Self:
        unknown = set(kwargs) - {"stream_id", "device_index", "device_type", "is_default_stream"}
        if unknown:
            raise TypeError(f"torch.hpu.Stream got unexpected keyword argument(s): {', '.join(sorted(unknown))}.")
        if "stream_id" not in kwargs and not kwargs.get("is_default_stream", False):
            index = _get_device_index(device, optional=True)
            return super().__new__(cls, torch.device("hpu", index), priority=priority)
        index = _get_device_index(kwargs.get("device_index", device), optional=True)
        hpu_type = _hpu_device_type()
        if int(kwargs.get("device_type", hpu_type)) != hpu_type:
            raise ValueError(f"torch.hpu.Stream wraps hpu streams only, not device_type={kwargs['device_type']}.")
        stream_id = 0 if kwargs.get("is_default_stream", False) else int(kwargs["stream_id"])
        return super().__new__(cls, stream_id, index, hpu_type, priority=priority)

    def wait_event(self, event: torch.Event) -> None:
        """Make future work on this stream wait for ``event`` (returns at once)."""
        event.wait(self)

    def wait_stream(self, stream: torch.Stream) -> None:
        """Make future work on this stream wait for the work issued on ``stream`` so far."""
        self.wait_event(stream.record_event())

    def record_event(self, event: torch.Event | None = None) -> torch.Event:
        """Record ``event`` (a new :class:`Event` if not given) on this stream and return it."""
        recorded = Event() if event is None else event
        recorded.record(self)
        return recorded

    def id(self) -> int:
        """The stream's id (0 for an HPU's default stream)."""
        return int(self.stream_id)

    @property
    def hpu_stream(self) -> int:
        """The device's handle of the stream (its id on the stand-in)."""
        return int(self.stream_id)

    @property
    def priority(self) -> int:
        """The stream's priority: HPU streams have one."""
        return 0

    @staticmethod
    def priority_range() -> tuple[int, int]:
        """``(least, greatest)`` priority, as the bridge reports them."""
        return 0, -1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, torch.Stream) and super().__eq__(other)

    def __hash__(self) -> int:
        return super().__hash__()

    def __repr__(self) -> str:
        return f"<torch.hpu.Stream device={self.device} hpu_stream={self.hpu_stream:#x}>"


class StreamContext:
    """Make ``stream`` the current stream of its HPU inside the block (a no-op for ``None``)."""

    def __init__(self, stream: torch.Stream | None) -> None:
        self.stream = stream
        self.previous: Stream | None = None

    def __enter__(self) -> None:
        if self.stream is None:
            return
        self.previous = current_stream(int(self.stream.device_index))
        set_stream(self.stream)

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self.previous is not None:
            set_stream(self.previous)
            self.previous = None


def stream(stream: torch.Stream | None) -> StreamContext:
    """Run the block with ``stream`` as the current stream (``with torch.hpu.stream(s):``)."""
    return StreamContext(stream)


def set_stream(stream: torch.Stream | None) -> None:
    """Make ``stream`` the current stream of its HPU on this thread (``None``: no change)."""
    if stream is None:
        return
    if not isinstance(stream, torch.Stream):
        raise TypeError(f"set_stream expects a torch.hpu.Stream, got {type(stream).__name__}.")
    _ops().set_stream(stream)


def current_stream(device: Any = None) -> Stream:
    """The calling thread's current stream of ``device`` (default: the current HPU)."""
    current = _ops().current_stream(_get_device_index(device, optional=True))
    return Stream(stream_id=current.stream_id, device_index=current.device_index, device_type=current.device_type)


def default_stream(device: Any = None) -> Stream:
    """The default stream of ``device`` (default: the current HPU)."""
    default = _ops().default_stream(_get_device_index(device, optional=True))
    return Stream(stream_id=default.stream_id, device_index=default.device_index, device_type=default.device_type)


def get_stream_info(stream: torch.Stream) -> tuple[torch.device, int]:
    """``(device, stream id)`` of an HPU stream."""
    if not isinstance(stream, torch.Stream) or stream.device.type != "hpu":
        raise ValueError(f"get_stream_info expects a torch.hpu.Stream, got {stream!r}.")
    return stream.device, int(stream.stream_id)


def record_stream(tensor: torch.Tensor, stream: torch.Stream) -> None:
    """Mark ``tensor``'s memory as in use by ``stream`` (what ``tensor.record_stream(stream)`` does on hpu)."""
    tensor.record_stream(stream)
