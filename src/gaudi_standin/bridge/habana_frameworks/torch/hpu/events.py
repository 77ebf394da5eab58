"""``habana_frameworks.torch.hpu.events`` on the stand-in: ``torch.hpu.Event``, a ``torch.Event`` of the ``hpu`` device.

As the bridge's, an event is recorded on a stream (the current one unless given), makes other streams wait for it,
and times the device between two events created with ``enable_timing=True``. It is torch's own event type, so
torch's stream API (``torch.Stream.wait_event``, ``torch.accelerator.current_stream().wait_event``, FSDP2) takes it.
The stand-in runs every op synchronously on the host, so an event is complete once recorded and its time is the
host's; the device's rules (an event stays on its HPU, only HPU streams record it) come from the device library.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from gaudi_standin.emulator import machine

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["Event"]


def _current_stream(device: int | None = None) -> torch.Stream:
    """The calling thread's current stream of ``hpu:device`` (default: of its current HPU)."""
    ops = torch.ops.lightning_hpu_standin
    return ops.current_stream(ops.current_device() if device is None else device)


class Event(torch.Event):
    """A synchronisation marker in an HPU stream's work (``torch.hpu.Event(enable_timing=False)``)."""

    def __new__(cls, enable_timing: bool = False) -> Self:
        return super().__new__(cls, "hpu", enable_timing=enable_timing)

    def record(self, stream: torch.Stream | None = None) -> None:
        """Record the event on ``stream`` (default: the current HPU stream).

        In lazy mode, recording on the current stream marks a step first, as the bridge does: the event then follows
        the work issued before it.
        """
        target = _current_stream() if stream is None else stream
        lazy = machine.current().is_lazy()
        if lazy and target.device.type == "hpu" and target == _current_stream(int(target.device_index)):
            machine.current().mark_step()
        super().record(target)

    def wait(self, stream: torch.Stream | None = None) -> None:
        """Make future work on ``stream`` (default: the current HPU stream) wait for this event."""
        super().wait(_current_stream() if stream is None else stream)

    def elapsed_time(self, end_event: torch.Event) -> float:
        """Milliseconds from this event to ``end_event`` (both recorded, both created with ``enable_timing=True``)."""
        if not isinstance(end_event, torch.Event) or end_event.device.type != "hpu":
            raise TypeError(f"elapsed_time expects an hpu event as end_event, got {end_event!r}.")
        # torch's binding takes exact torch.Event objects only, so the device library reads the two events itself.
        return float(torch.ops.lightning_hpu_standin.event_elapsed_time(self.event_id, end_event.event_id))

    def __repr__(self) -> str:
        if not self.event_id:
            return "<torch.hpu.Event uninitialized>"
        return f"<torch.hpu.Event {self.event_id:#x}>"
