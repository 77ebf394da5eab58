"""The ``lightning-hpu`` command and ``python -m lightning_hpu``: ``lightning-hpu [<command>] [options]``.

Its commands (:data:`COMMANDS`): ``env``, the environment report (:mod:`lightning_hpu.support.env_report`, also
``lightning-hpu-env``, and what ``lightning-hpu`` alone prints), and ``check``, the node check
(:mod:`lightning_hpu.pytorch.check.cli`). ``lightning-hpu --help`` lists them, one line each; each has its own
``--help``; an unknown command is refused, naming the commands there are.

Imports (the layering test checks this paragraph): no Lightning package by name; of this package, ``pytorch`` and
``support`` (the node check's command and the environment report, each imported when asked for).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

PROG = "lightning-hpu"


@dataclass(frozen=True)
class Command:
    """A command of ``lightning-hpu``: its one-line summary for ``--help``, and what runs it with its arguments."""

    summary: str
    run: Callable[[list[str]], int]


def _environment_report(arguments: list[str]) -> int:
    from lightning_hpu.support.env_report import main

    return main(arguments, prog=f"{PROG} env")


def _node_check(arguments: list[str]) -> int:
    from lightning_hpu.pytorch.check.cli import main

    return main(arguments)


#: The commands, in the order ``--help`` lists them; the first is what ``lightning-hpu`` alone runs.
COMMANDS = {
    "env": Command("print the environment report (the default)", _environment_report),
    "check": Command("prove this node trains with Lightning on its HPUs", _node_check),
}


def parser() -> argparse.ArgumentParser:
    """The command's own parser: it lists the commands and refuses unknown ones (each command parses its options)."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        usage=f"{PROG} [-h] [<command>] [options]",
        description="lightning-hpu: Lightning on Intel Gaudi (HPU). Without a command it prints the environment"
        f" report; `{PROG} <command> --help` shows a command's options.",
    )
    commands = parser.add_subparsers(title="commands", dest="command", metavar="<command>")
    for name, command in COMMANDS.items():
        commands.add_parser(name, help=command.summary, add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command ``argv`` names (the environment report without one); its exit status."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] and arguments[0] in COMMANDS:
        return COMMANDS[arguments[0]].run(arguments[1:])
    parser().parse_args(arguments)  # ``--help`` exits here, and so does an unknown command, with status 2
    return COMMANDS["env"].run([])


if __name__ == "__main__":
    sys.exit(main())
