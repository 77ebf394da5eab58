"""The ``lightning-hpu`` command and ``python -m lightning_hpu``.

``check`` runs the node check (:mod:`lightning_hpu.pytorch.check.cli`); without a subcommand it prints the
environment report (:mod:`lightning_hpu.support.env_report`), as ``lightning-hpu-env`` does.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["check"]:
        from lightning_hpu.pytorch.check.cli import main as check

        return check(arguments[1:])
    from lightning_hpu.support.env_report import main as env_report

    return env_report(arguments)


if __name__ == "__main__":
    sys.exit(main())
