"""The tests are laid out like the source: the tests of ``src/<package>/<folder>/`` are in
``tests/<package>/<folder>/``, and the scripts they start and the helpers they share each have one folder."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.paths import ROOT, SRC, TESTS

#: The top of ``tests/``: the source's two packages, the repository's examples and pages, the tree as a whole, the
#: scripts tests start as processes, shared helpers, and data files.
TOP_LEVEL = {"lightning_hpu", "gaudi_standin", "examples", "docs", "repository", "scenarios", "helpers", "data"}


def _folders(root: Path) -> list[Path]:
    return sorted(
        path for path in root.rglob("*") if path.is_dir() and "__pycache__" not in path.parts and path != root
    )


def test_each_test_folder_of_a_package_mirrors_a_source_folder() -> None:
    for package in ("lightning_hpu", "gaudi_standin"):
        for folder in _folders(TESTS / package):
            relative = folder.relative_to(TESTS)
            assert (SRC / relative).is_dir(), f"tests/{relative}/ has no source folder src/{relative}/ to mirror"


def test_the_top_of_tests_holds_only_its_folders() -> None:
    folders = {path.name for path in TESTS.iterdir() if path.is_dir() and path.name != "__pycache__"}
    assert folders == TOP_LEVEL, f"unexpected folders at the top of tests/: {sorted(folders ^ TOP_LEVEL)}"
    files = {path.name for path in TESTS.iterdir() if path.is_file() and path.suffix == ".py"}
    assert files == {"__init__.py", "conftest.py"}, "a test belongs in the folder mirroring what it tests"
    assert {path.name for path in (TESTS / "examples").glob("test_*.py")}, "examples/ tests run the examples"
    assert (ROOT / "examples").is_dir()


def test_scripts_and_helpers_hold_no_tests_and_tests_are_named_test() -> None:
    for folder in ("scenarios", "helpers"):
        tests_there = sorted(path.name for path in (TESTS / folder).glob("test_*.py"))
        assert not tests_there, f"tests/{folder}/ holds {tests_there}: tests go beside what they test"
    for package in ("lightning_hpu", "gaudi_standin", "examples", "docs", "repository"):
        for path in (TESTS / package).rglob("*.py"):
            assert path.name.startswith("test_") or path.name in {"__init__.py", "conftest.py"}, (
                f"{path.relative_to(ROOT)} is neither a test file nor a package's set-up: a script tests start goes "
                "in tests/scenarios/, a shared helper in tests/helpers/"
            )
