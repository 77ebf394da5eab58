"""Runs the complete ```python blocks of the README and the docs, one after the other, in this one process (one
Lightning import).

``python tests/scenarios/readme_snippets_scenario.py BLOCKS.json``: the file holds
``[{"line": "<page>:<n>", "env": {...}, "code": "..."}]``.
Each block runs as ``__main__`` in its own namespace and its own empty working directory, with the HPU variables of
the previous block removed and its own set (a new shell's view); the backend is created anew for it. One line per
block: ``<line>\tok`` or ``<line>\tfailed\t<traceback, on one line>``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import traceback
from pathlib import Path

#: The repository root, so that ``tests.helpers.standin`` imports when this file runs as a script.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

#: Variables a block's environment comment may set, or that a run leaves behind (the binding of an HPU).
HPU_VARIABLE_PREFIXES = ("LIGHTNING_HPU_", "PT_HPU_", "HABANA_", "HLS_")


def _fresh_environment(variables: dict[str, str]) -> None:
    for name in [name for name in os.environ if name.startswith(HPU_VARIABLE_PREFIXES)]:
        del os.environ[name]
    os.environ.update(variables)
    if "lightning_hpu" in sys.modules:
        from tests.helpers.standin import reset_backend

        reset_backend()


def main() -> None:
    blocks = json.loads(Path(sys.argv[1]).read_text())
    home = os.getcwd()
    for block in blocks:
        _fresh_environment(block["env"])
        with tempfile.TemporaryDirectory() as workdir:
            os.chdir(workdir)  # contextlib.chdir needs Python 3.11
            try:
                code = compile(block["code"], f"block at {block['line']}", "exec")
                exec(code, {"__name__": "__main__"})
            except BaseException:
                trace = traceback.format_exc().replace("\n", " | ")
                print(f"{block['line']}\tfailed\t{trace}", flush=True)
                continue
            finally:
                os.chdir(home)
        print(f"{block['line']}\tok", flush=True)


if __name__ == "__main__":
    main()
