"""``lightning-hpu check`` (and ``python -m lightning_hpu check``): a short acceptance run of this node.

The command runs the devices check and the single-HPU fits in its own process, while two worker processes
(:mod:`.worker`, started first so that their start-up overlaps the fits) run the lazy-mode fit (lazy mode is chosen
when the bridge loads, so it needs a process of its own) and the multi-HPU checks (one launch of N ranks). Each row
is printed as it arrives; ``--json`` writes them all; the exit status is 1 when a row failed, 2 for a usage error.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from lightning_hpu.check import report
from lightning_hpu.check.devices import devices_row, visible_devices
from lightning_hpu.check.faults import injected
from lightning_hpu.check.launch import Worker, rank_environments
from lightning_hpu.check.rows import CHECKS, Row
from lightning_hpu.check.table import Table
from lightning_hpu.pytorch.check.single import SingleChecks
from lightning_hpu.runtime import bridge_emulated, get_backend, settings

#: Variables of an outer launch that a worker must not inherit: each worker is a launch of its own.
LAUNCH_VARIABLES = ("MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK", "NODE_RANK", "GROUP_RANK")


def worker_env(lazy: bool) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if name not in LAUNCH_VARIABLES}
    env[settings.LAZY_MODE_ENV] = "1" if lazy else "0"
    return env


class Check:
    """One run of the command: the rows so far, printed as they arrive (from any thread)."""

    def __init__(self, checks: list[str], devices: int, steps: int, quick: bool, timeout: float) -> None:
        self.checks, self.devices, self.steps, self.quick, self.timeout = checks, devices, steps, quick, timeout
        self.rows: dict[str, Row] = {}
        self.table = Table()
        self.expected = sum(len(report.ROWS[name]) for name in CHECKS)
        self._lock = threading.Lock()

    def add(self, row: Row) -> None:
        with self._lock:
            self.rows[row.name] = row
            self.table.row(row)

    def starting(self, what: str) -> None:
        with self._lock:
            self.table.step(len(self.rows), self.expected, what)

    def worker(self, group: str, rows: list[str]) -> Worker | None:
        wanted = [name for name in rows if name.split(".")[0] in self.checks]
        if not wanted:
            return None
        arguments = [
            group,
            "--checks",
            ",".join(self.checks),
            "--steps",
            str(self.steps),
            "--devices",
            str(self.devices),
            *(["--quick"] if self.quick else []),
        ]
        env = worker_env(lazy=group == "lazy")
        envs = rank_environments(env, self.devices) if group == "multi" else [env]
        return Worker(arguments, envs, self.timeout, self.add)

    def finish(self, worker: Worker | None, names: list[str]) -> None:
        if worker is None:
            return
        run = worker.join()
        for row in report.missing_rows(names, self.rows, run.failure()):
            self.add(row)

    def run(self) -> None:
        self.table.header()
        if self.devices == 0:  # nothing can train: the devices row says why
            self.add(devices_row(1))
            for name in [row for check in self.checks if check != "devices" for row in report.ROWS[check]]:
                self.add(Row(name, "needs an HPU", "fail", detail="no HPU (see the devices row)"))
            return
        multi_rows = report.ROWS["multi"] if self.devices >= 2 else []
        workers: list[tuple[Worker | None, list[str]]] = []
        try:
            workers.append((self.worker("multi", multi_rows), multi_rows))
            workers.append((self.worker("lazy", ["fit.lazy"]), ["fit.lazy"]))
            if "devices" in self.checks:
                self.starting("devices")
                self.add(devices_row(self.devices))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the rows are the output; Lightning's tips would bury them
                SingleChecks(set(self.checks), self.steps, self.add, self.starting).run()
            self.starting("waiting for the lazy-mode fit and the multi-HPU checks")
            for worker, names in reversed(workers):
                self.finish(worker, names)
        finally:
            for worker, _ in workers:
                if worker is not None:
                    worker.kill()
        if "fit" in self.checks:
            self.add(report.modes_row(self.rows))
        if "multi" in self.checks and not multi_rows:
            for name in report.ROWS["multi"]:
                self.add(Row(name, "multi-HPU", "n/a", detail=f"needs 2 or more HPUs ({self.devices} checked)"))
        for name in CHECKS:
            if name not in self.checks:
                self.add(Row(name, "left out by --only/--skip", "skip"))


@contextmanager
def _lightning_says_errors_only() -> Iterator[None]:
    """Lightning's info lines (devices, fit stopped) would break up the table; the levels are restored after, as the
    check also runs inside other programs (and the tests)."""
    loggers = [logging.getLogger(name) for name in ("lightning.pytorch", "lightning.fabric")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the check; the exit status is 0 when every row passed (or is n/a or skipped), 1 when one failed."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = report.parser()
    args = parser.parse_args(argv)
    try:
        injected()
        devices = report.devices_to_check(args.devices, visible_devices())
    except ValueError as error:
        parser.error(str(error))
    start = time.perf_counter()
    steps = report.QUICK_STEPS if args.quick else report.FULL_STEPS
    check = Check(report.selected_checks(args.only, args.skip), devices, steps, args.quick, args.timeout)
    with _lightning_says_errors_only():
        check.run()
    seconds = time.perf_counter() - start
    check.table.summary(list(check.rows.values()), seconds)
    backend = get_backend()
    available = backend is not None and backend.is_available()
    name = ("CPU stand-in" if bridge_emulated() else "Intel Gaudi bridge") if available else "none"
    device = backend.device_name() if backend is not None and available else ""
    document = report.document(check.rows, argv, name, device, devices, args.quick, seconds)
    if args.json is not None:
        args.json.write_text(json.dumps(document, indent=2) + "\n")
    return 0 if document["passed"] else 1
