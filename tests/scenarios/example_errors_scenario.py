"""Runs every example as ``__main__`` in this one process, twice, and prints how each ended (one Lightning import).

First without a Gaudi and without the stand-in (start it with ``LIGHTNING_HPU_BACKEND=cpu`` on a machine without the
bridge, so that the stand-in's start-up hook is in place for the second part; the first part runs with the variable
unset, which the package reads as "no stand-in"), then on a one-HPU stand-in with ``--devices 2`` for the examples
that take ``--devices``. Each example
runs with ``sys.argv`` as a user would type it and should stop on the user error before training. One line per run:
``<scenario>\t<example>\t<exit status or traceback>``.
"""

from __future__ import annotations

import contextlib
import io
import os
import runpy
import sys
import tempfile
from pathlib import Path

#: The repository root, so that ``tests.helpers.standin`` imports when this file runs as a script.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
#: gaudi_script.py imports the bridge, real or emulated, as its first line: without either, Python stops it before
#: any of its code. litgpt_cli.py is LitGPT's own command line, whose argument errors are LitGPT's
#: (tests/examples/test_litgpt_cli.py runs it on the stand-in).
NOT_RUN = {"gaudi_script.py", "litgpt_cli.py"}


def _run(scenario: str, example: Path, extra: list[str]) -> None:
    argv = [str(example)]
    if example.name == "cli.py":
        argv += ["fit", "--config", str(EXAMPLES / "cli_config.yaml")]
    sys.argv = argv + extra
    status: object = 0
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            runpy.run_path(str(example), run_name="__main__")
    except SystemExit as end:
        status = end.code
    except BaseException as error:  # reported, not raised: the test names the example
        status = f"traceback: {type(error).__name__}: {error}"
    print(f"{scenario}\t{example.name}\t{status}".replace("\n", " "), flush=True)


def main() -> None:
    from tests.helpers.standin import reset_backend

    sys.path.insert(0, str(EXAMPLES))
    examples = [example for example in sorted(EXAMPLES.glob("*.py")) if example.name not in NOT_RUN]
    with tempfile.TemporaryDirectory() as workdir:
        os.chdir(workdir)  # what the examples write lands here (contextlib.chdir needs Python 3.11)
        del os.environ["LIGHTNING_HPU_BACKEND"]
        reset_backend()
        for example in examples:
            _run("no-hpu", example, [])
        os.environ.update(LIGHTNING_HPU_BACKEND="cpu", LIGHTNING_HPU_CPU_DEVICES="1")
        reset_backend()
        for example in examples:
            if '"--devices"' in example.read_text():
                _run("too-few-devices", example, ["--devices", "2"])


if __name__ == "__main__":
    main()
