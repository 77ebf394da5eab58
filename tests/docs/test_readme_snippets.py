"""Every ```python block of README.md and of the documentation (docs/**/*.md) is a complete program that runs on
the stand-in, or is marked a fragment.

The convention, visible in the pages themselves:

* a block whose first line is ``# fragment`` (optionally ``# fragment: <what it shows>``) shows an API and is not
  run (it must still compile);
* any other block is a complete program: its first line is ``# run: <environment and command>`` (or the older
  ``# run with VAR=value ...``), the environment it needs on the CPU stand-in (at least
  ``LIGHTNING_HPU_BACKEND=cpu``), and it imports ``lightning_hpu`` itself. The complete blocks run here, all in one
  process (``readme_snippets_scenario.py``), each with only its own variables set.

Blocks and pages added later are covered without editing this file.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.paths import ROOT, SCENARIOS

README = ROOT / "README.md"
RUNNER = SCENARIOS / "readme_snippets_scenario.py"
#: The pages whose code blocks are checked: the README and every Markdown page of the documentation.
PAGES = [README, *sorted(path for path in (ROOT / "docs").rglob("*.md") if "_build" not in path.parts)]

FRAGMENT = "# fragment"
RUN_PREFIXES = ("# run: ", "# run with ")


@dataclass(frozen=True)
class Block:
    page: str  # the page's path from the clone's root
    line: int  # of the first code line in the page
    code: str

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def first_line(self) -> str:
        return self.code.splitlines()[0] if self.code.strip() else ""

    @property
    def is_fragment(self) -> bool:
        return self.first_line == FRAGMENT or self.first_line.startswith((FRAGMENT + ":", FRAGMENT + " "))

    @property
    def environment(self) -> dict[str, str]:
        """The variables of the ``# run:`` line (its text up to an opening parenthesis)."""
        prefix = next((prefix for prefix in RUN_PREFIXES if self.first_line.startswith(prefix)), None)
        if prefix is None:
            return {}
        settings = self.first_line[len(prefix) :].split("(", 1)[0]
        return dict(re.findall(r"([A-Z][A-Z0-9_]*)=(\S+)", settings))


def python_blocks(text: str, page: str = "README.md") -> list[Block]:
    blocks, lines = [], text.splitlines()
    index = 0
    while index < len(lines):
        if lines[index].strip() == "```python":
            end = next(i for i in range(index + 1, len(lines)) if lines[i].strip() == "```")
            blocks.append(Block(page=page, line=index + 2, code="\n".join(lines[index + 1 : end]) + "\n"))
            index = end
        index += 1
    return blocks


BLOCKS = [block for path in PAGES for block in python_blocks(path.read_text(), str(path.relative_to(ROOT)))]
COMPLETE = [block for block in BLOCKS if not block.is_fragment]


def test_the_pages_have_both_kinds() -> None:
    assert len(BLOCKS) >= 10 and COMPLETE, "the extraction found the pages' blocks"
    assert any(block.page == "README.md" for block in COMPLETE), "the README shows one complete example"
    first = BLOCKS[0]
    assert first.line > 0 and (ROOT / first.page).read_text().splitlines()[first.line - 2] == "```python"


@pytest.mark.parametrize("block", BLOCKS, ids=lambda block: block.where)
def test_every_block_is_a_program_with_its_environment_or_a_fragment(block: Block) -> None:
    compile(block.code, block.where, "exec")  # fragments too must be valid Python
    if block.is_fragment:
        return
    assert block.environment.get("LIGHTNING_HPU_BACKEND") == "cpu", (
        f"{block.where}: start a complete block with '# run: LIGHTNING_HPU_BACKEND=cpu <command>' (the"
        " environment it needs), or mark it '# fragment'"
    )
    # Installed, lightning_hpu registers the HPU names when Lightning is imported; a Gaudi-style script gets hpu from
    # the bridge's import. A complete program uses one or the other.
    assert re.search(
        r"^\s*(import (lightning_hpu|habana_frameworks)|from (lightning_hpu|habana_frameworks)[.\w]* import)"
        r"|accelerator=[\"']hpu[\"']",
        block.code,
        re.MULTILINE,
    ), (
        f"{block.where}: a complete program asks Lightning for accelerator='hpu', imports lightning_hpu, or imports"
        " habana_frameworks as a Gaudi script does"
    )


def test_the_complete_blocks_run_on_the_stand_in(tmp_path: Path, python_executable: str) -> None:
    spec = [{"line": block.where, "env": block.environment, "code": block.code} for block in COMPLETE]
    blocks_file = tmp_path / "blocks.json"
    blocks_file.write_text(json.dumps(spec))
    env = {name: value for name, value in os.environ.items() if not name.startswith(("LIGHTNING_HPU_", "PT_HPU_"))}
    # Every block runs with LIGHTNING_HPU_BACKEND=cpu (checked above), which chooses the stand-in at start-up.
    env["LIGHTNING_HPU_BACKEND"] = "cpu"
    done = subprocess.run(
        [python_executable, str(RUNNER), str(blocks_file)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = dict(line.split("\t", 1) for line in done.stdout.splitlines() if re.match(r"^\S+:\d+\t", line))
    assert set(results) == {block.where for block in COMPLETE}, done.stdout[-3000:]
    failed = {where: result for where, result in results.items() if result != "ok"}
    assert not failed, "\n".join(f"{where}: {result}" for where, result in failed.items())
