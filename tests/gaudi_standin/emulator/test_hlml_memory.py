"""The HLML memory report: ``hpu.memory._get_hlml_shared_object_name()`` names a shared-memory object with the
bridge's record (version 1, a timestamp, the memory in use), rewritten every second, removed at exit."""

from __future__ import annotations

import mmap
import os
import struct
import subprocess
import sys
import time
from pathlib import Path

import torch

from gaudi_standin.bridge.habana_frameworks.torch.hpu import memory
from gaudi_standin.emulator import hlml_memory


def _read(name: str) -> tuple[int, int, int]:
    with (
        open(Path("/dev/shm") / name.lstrip("/"), "rb") as file,
        mmap.mmap(file.fileno(), 24, prot=mmap.PROT_READ) as m,
    ):
        values: tuple[int, int, int] = struct.unpack("QQQ", m[:])
        return values


def test_the_report_publishes_the_memory_in_use_each_second(standin: object) -> None:
    name = memory._get_hlml_shared_object_name()
    assert name == memory._get_hlml_shared_object_name(0)  # one object per device
    version, stamp, used = _read(name)
    assert version == 1 and abs(stamp - time.time()) < 5
    block = torch.zeros(2 * 2**20, device="hpu")  # 8 MiB
    deadline = time.monotonic() + 5
    while _read(name)[2] < used + block.nbytes and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _read(name)[2] >= used + block.nbytes
    deadline = time.monotonic() + 5
    while _read(name)[1] <= stamp and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _read(name)[1] > stamp  # the timestamp moves on: the report is alive
    del block


def test_the_object_is_removed_at_exit() -> None:
    script = (
        "import habana_frameworks.torch.hpu as h, torch; torch.ones(1, device='hpu');"
        " print(h.memory._get_hlml_shared_object_name())"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "LIGHTNING_HPU_BACKEND": "cpu"},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    name = result.stdout.strip().splitlines()[-1]
    assert name.startswith("/lightning_hpu_hlml_")
    assert not (hlml_memory.SHM_DIR / name.lstrip("/")).exists()
