"""The HLML memory report: a shared-memory object where a Gaudi process publishes its device memory in use.

The bridge's allocator (``backend/synapse_helpers/mem_hlml.cpp``) creates a POSIX shared-memory object per device,
three ``uint64`` values (``version`` = 1, ``timestamp`` in seconds, ``used_mem_in_bytes``), and a thread rewrites the
last two every second; Habana's management library (HLML, ``hl-smi``) reads it to show each process's memory.
``habana_frameworks.torch.hpu.memory._get_hlml_shared_object_name(device)`` names it (``/dev/shm/<name>``).

The stand-in publishes the same record with the stand-in allocator's bytes in use (``memory_allocated``). Two
differences, each for a reason: the bridge creates the object when the device initialises, the stand-in when its
name is first asked for (nothing else on a machine without Gaudis reads it, so other processes pay nothing); and
the name carries the process id (``/lightning_hpu_hlml_<pid>_<device>``; the bridge's prefix is in Habana's private
headers), since several stand-in processes may share an emulated device where a Gaudi has one process per card. The
object is removed at exit, as the bridge's reporter unlinks it.
"""

from __future__ import annotations

import atexit
import mmap
import os
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path

#: The record's layout and version, and how often it is rewritten (seconds), as the bridge's.
LAYOUT = struct.Struct("QQQ")
VERSION = 1
INTERVAL = 1.0
SHM_DIR = Path("/dev/shm")


class Reporter:
    """Publishes one device's memory in use to its shared-memory object, every :data:`INTERVAL` seconds."""

    def __init__(self, device: int, used_bytes: Callable[[], int]) -> None:
        self.name = f"/lightning_hpu_hlml_{os.getpid()}_{device}"
        self._path = SHM_DIR / self.name.lstrip("/")
        self._used_bytes = used_bytes
        with open(self._path, "w+b") as file:
            file.truncate(LAYOUT.size)
            self._mem = mmap.mmap(file.fileno(), LAYOUT.size)
        self._stop = threading.Event()
        self.publish()
        self._thread = threading.Thread(target=self._run, name=f"hlml-memory-{device}", daemon=True)
        self._thread.start()

    def publish(self) -> None:
        self._mem[:] = LAYOUT.pack(VERSION, int(time.time()), int(self._used_bytes()))

    def _run(self) -> None:
        while not self._stop.wait(INTERVAL):
            self.publish()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self._mem.close()
        self._path.unlink(missing_ok=True)


_reporters: dict[int, Reporter] = {}
_lock = threading.Lock()


def shared_object_name(device: int, used_bytes: Callable[[], int]) -> str:
    """The name of ``device``'s report, started on first use."""
    with _lock:
        reporter = _reporters.get(device)
        if reporter is None:
            if not _reporters:
                atexit.register(_close_all)
            reporter = _reporters[device] = Reporter(device, used_bytes)
        return reporter.name


def _close_all() -> None:
    with _lock:
        for reporter in _reporters.values():
            reporter.close()
        _reporters.clear()
