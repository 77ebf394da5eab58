"""Where things are, for tests at any depth of ``tests/``: the repository, its folders, the scenario scripts."""

from __future__ import annotations

from pathlib import Path

#: The repository's root (the clone).
ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
EXAMPLES = ROOT / "examples"
DOCS = ROOT / "docs"
BENCHMARKS = ROOT / "benchmarks"
TESTS = ROOT / "tests"
#: Scripts the tests start as processes (``tests/scenarios/``).
SCENARIOS = TESTS / "scenarios"
#: Files the tests read (``tests/data/``).
DATA = TESTS / "data"
