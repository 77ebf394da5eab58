"""A worker process of ``lightning-hpu check``: ``python -m lightning_hpu.pytorch.check.worker GROUP ...``.

``lazy`` runs the lazy-mode fit (started with ``PT_HPU_LAZY_MODE=1``), ``multi``
the multi-HPU checks as one of ``--devices`` ranks (the command starts them all, with ``LOCAL_RANK`` set).
Each row goes to standard output as it is ready (:func:`lightning_hpu.check.rows.emit`); the command
(:mod:`lightning_hpu.pytorch.check.cli`) starts the workers, prints the rows and kills a worker that outlives its time.
"""

from __future__ import annotations

import argparse
import logging
import warnings
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lightning_hpu.pytorch.check.worker")
    parser.add_argument("group", choices=("lazy", "multi"))
    parser.add_argument("--checks", default="", help="comma-separated check groups to run")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--devices", type=int, default=1)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    checks = {name for name in args.checks.split(",") if name}
    # The rows are the output: Lightning's and the tips' lines would only bury them (they stay in the log).
    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")
    if args.group == "lazy":
        from lightning_hpu.pytorch.check import lazy

        lazy.run(args.steps)
    else:
        from lightning_hpu.pytorch.check.multi import MultiChecks

        MultiChecks(checks, args.devices, args.steps, args.quick).run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
