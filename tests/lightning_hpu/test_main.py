"""The ``lightning-hpu`` command (``python -m lightning_hpu``): its help lists its commands, one line each, and an
unknown command is refused as ``lightning-hpu``, naming the commands there are.

The environment report's content is tested in ``support/test_env_report.py``, the node check's in
``pytorch/check/test_cli.py``; here is the command line that leads to them.
"""

from __future__ import annotations

import re

import pytest

from lightning_hpu.__main__ import COMMANDS, main


def _exit_status(arguments: list[str]) -> int | str | None:
    with pytest.raises(SystemExit) as exit_info:
        main(arguments)
    return exit_info.value.code


def test_help_lists_every_command_on_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert _exit_status(["--help"]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith("usage: lightning-hpu ")
    assert set(COMMANDS) == {"env", "check"}
    for name, command in COMMANDS.items():
        assert re.search(rf"^ +{name} +{re.escape(command.summary)}$", shown, re.MULTILINE), shown
    assert "environment report" in COMMANDS["env"].summary and "lightning-hpu-env" not in shown


def test_an_unknown_command_is_refused_naming_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    assert _exit_status(["bogus"]) == 2
    shown = capsys.readouterr().err
    assert shown.startswith("usage: lightning-hpu ") and "lightning-hpu-env" not in shown
    assert "lightning-hpu: error:" in shown and "'bogus'" in shown
    assert "'env', 'check'" in shown, shown


def test_each_command_shows_its_own_help_under_its_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert _exit_status(["env", "--help"]) == 0
    assert capsys.readouterr().out.startswith("usage: lightning-hpu env ")
    assert _exit_status(["check", "--help"]) == 0
    assert capsys.readouterr().out.startswith("usage: lightning-hpu check ")


def test_env_and_no_command_print_the_environment_report(standin: object, capsys: pytest.CaptureFixture[str]) -> None:
    for arguments in ([], ["env"]):
        assert main(arguments) == 0
        assert capsys.readouterr().out.startswith("lightning-hpu environment report")
