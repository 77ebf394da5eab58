"""The CPU stand-in as the tests see it: its emulated runtime (what only the stand-in knows), reset with the backend."""

from __future__ import annotations

from gaudi_standin.emulator import machine as standin_runtime
from gaudi_standin.emulator.counters import StandInCounters
from lightning_hpu.runtime import reset_backend as reset_package_backend


def reset_backend() -> None:
    """Forget the package's backend and the stand-in's runtime, so both read the environment again.

    On a Gaudi the bridge reads its environment once per process; the tests change it between cases, so they start
    the emulated runtime afresh too.
    """
    reset_package_backend()
    standin_runtime.reset()


def counters() -> StandInCounters:
    """The stand-in's counters of this process (mark steps, syncs, graph captures, compiled recipes...)."""
    return standin_runtime.current().counters
