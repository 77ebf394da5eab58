"""The command's arguments, the rows it expects, the rows it derives and the JSON document it writes.

Lightning-free: the command that runs the checks is :mod:`lightning_hpu.pytorch.check.cli`.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Sequence
from pathlib import Path

from lightning_hpu.check import expectations as expect
from lightning_hpu.check.rows import CHECKS, Row, verdict
from lightning_hpu.check.schema import SCHEMA_VERSION

#: Training steps per fit (an even number of epochs of 2 batches: the resume check saves at half way).
QUICK_STEPS, FULL_STEPS = 8, 32
#: The rows of each check group, in the order they are printed when each runs on its own.
ROWS = {
    "devices": ["devices"],
    "fit": ["fit.eager", "fit.compile", "fit.recompiles", "fit.lazy", "fit.modes"],
    "precision": ["precision.bf16", "precision.fp8"],
    "multi": ["multi.ddp", "multi.allreduce", "multi.fsdp2", "multi.deepspeed"],
    "throughput": ["throughput"],
    "checkpoints": ["checkpoints.async", "checkpoints.resume"],
    "memory": ["memory"],
}


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lightning-hpu check",
        description="Prove this node trains with Lightning on its HPUs: a table of checks, exit status 1 if one"
        " fails. Attach the --json output to bug reports.",
    )
    parser.add_argument("--quick", action="store_true", help="fewer steps and smaller messages (under a minute)")
    parser.add_argument("--devices", type=int, default=None, help="HPUs to check on (default: every visible HPU)")
    parser.add_argument("--only", action="append", choices=CHECKS, default=[], help="run only this check (repeat)")
    parser.add_argument("--skip", action="append", choices=CHECKS, default=[], help="leave this check out (repeat)")
    parser.add_argument("--json", type=Path, default=None, metavar="PATH", help="write the rows as JSON to PATH")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds each worker process may take")
    return parser


def selected_checks(only: Sequence[str], skip: Sequence[str]) -> list[str]:
    """The check groups ``--only`` and ``--skip`` leave, in their running order."""
    return [name for name in CHECKS if (not only or name in only) and name not in skip]


def devices_to_check(requested: int | None, visible: int) -> int:
    """``--devices``, or every visible HPU; a count beyond the visible ones is refused in one sentence."""
    if requested is None:
        return visible
    if not 0 < requested <= max(visible, 1):
        raise ValueError(
            f"--devices {requested} asks for more HPUs than the {visible} visible; pass --devices {max(visible, 1)}"
            " or fewer (or leave it out for all)."
        )
    return requested


def modes_row(rows: dict[str, Row]) -> Row:
    """``fit.modes``: the per-step losses of compiled and lazy mode against eager mode's."""
    modes = {
        name.split(".")[1]: rows[name].extra["losses"]
        for name in ("fit.eager", "fit.compile", "fit.lazy")
        if name in rows and rows[name].extra.get("losses")
    }
    row = Row("fit.modes", "same loss: eager, compiled, lazy", "fail")
    row.expected = f"per-step losses within {expect.MODES_RTOL:.0%}"
    if "eager" not in modes or len(modes) < 2:
        row.detail = "fewer than two modes trained: nothing to compare"
        return row
    worst = {
        mode: max(expect.relative_difference(a, b) for a, b in zip(losses, modes["eager"], strict=False))
        for mode, losses in modes.items()
        if mode != "eager"
    }
    row.figure = ", ".join(f"{mode} {difference:.2%}" for mode, difference in worst.items()) + " from eager"
    same_length = all(len(losses) == len(modes["eager"]) for losses in modes.values())
    row.value = max(worst.values())
    row.result = verdict(same_length and row.value <= expect.MODES_RTOL)
    return row


def missing_rows(names: Sequence[str], rows: dict[str, Row], why: str) -> list[Row]:
    """A failed row for each of ``names`` that never arrived."""
    return [Row(name, "did not report", "fail", detail=why or "no row was sent") for name in names if name not in rows]


def document(
    rows: dict[str, Row],
    argv: Sequence[str],
    backend: str,
    device: str,
    devices: int,
    quick: bool,
    seconds: float,
) -> dict[str, object]:
    """The JSON document of ``schema.json``."""
    versions = rows["devices"].extra.get("versions", {}) if "devices" in rows else {}
    return {
        "schema_version": SCHEMA_VERSION,
        "command": shlex.join(["lightning-hpu", "check", *argv]),
        "versions": {str(name): str(value) for name, value in versions.items()},
        "backend": backend,
        "device": device,
        "devices": devices,
        "quick": quick,
        "passed": not any(row.result == "fail" for row in rows.values()),
        "seconds": round(seconds, 3),
        "rows": [row.to_json() for row in rows.values()],
    }
