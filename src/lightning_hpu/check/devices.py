"""The ``devices`` check: what the node has (count, generation, memory, mode, versions) and what the environment
report finds wrong (:mod:`lightning_hpu.support.env_report`)."""

from __future__ import annotations

import time

from lightning_hpu.check.expectations import generation
from lightning_hpu.check.faults import fault
from lightning_hpu.check.rows import Row, verdict
from lightning_hpu.runtime import bridge_emulated, get_backend
from lightning_hpu.support import env_report

WHAT = "devices, versions, environment"


def visible_devices() -> int:
    """How many HPUs this process sees (0 without a bridge or stand-in)."""
    backend = get_backend()
    return backend.device_count() if backend is not None and backend.is_available() else 0


def devices_row(requested: int) -> Row:
    """Pass when ``requested`` HPUs are there and the environment report finds no error."""
    start = time.perf_counter()
    report = env_report.collect()
    if fault("devices"):
        report.errors.append("injected by the test suite's fault (LIGHTNING_HPU_TEST_CHECK_FAULT=devices)")
    versions = dict(next((rows for title, rows in report.sections if title == "Versions"), []))
    backend = get_backend()
    count = visible_devices()
    row = Row("devices", WHAT, "fail", expected=f">= {requested} HPU, no report error")
    if backend is not None and count:
        device = backend.device_name()
        memory = backend.memory_stats().get("Limit", 0)
        published = generation(device).hbm_bytes
        mode = "lazy" if backend.is_lazy() else "eager"
        row.figure = f"{count} x {device}, {memory / 2**30:.1f} GiB each, {mode}"
        if published:
            row.expected += f"; {published / 2**30:.0f} GiB HBM"
        row.value = float(count)
        row.extra = {"device": device, "count": count, "memory_bytes": memory, "mode": mode}
    else:
        row.figure = "no HPU"
    row.result = verdict(count >= requested > 0 and not report.errors)
    row.standin = bridge_emulated()
    problems = [f"error: {text}" for text in report.errors] + [f"warning: {text}" for text in report.warnings]
    row.detail = " ".join(problems)
    row.extra.update(versions=versions, errors=report.errors, warnings=report.warnings)
    row.seconds = round(time.perf_counter() - start, 3)
    return row
