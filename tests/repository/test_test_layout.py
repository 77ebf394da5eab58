"""The tests are laid out like the source, both ways: the tests of ``src/<package>/<folder>/`` are in
``tests/<package>/<folder>/``, every such test folder mirrors a source folder, and every source folder with code has
its test folder, holding tests. The scripts the tests start and the helpers they share each have one folder.

* A source folder *has code* when it holds a Python module besides ``__init__.py``, or an ``__init__.py`` that defines
  a function or a class. (``gaudi_standin/device/csrc/`` holds the device library's C++ sources, which
  ``gaudi_standin.device`` builds and loads: they are tested through it, in ``tests/gaudi_standin/device/``.)
* A test file is named ``test_<module>.py`` after the module it tests, or ``test_<module>_<aspect>.py`` when one
  module's tests are split (``test_process_group_multiprocess.py``); no file of ``tests/`` is over
  :data:`MAX_LINES` lines.
* A script the tests start as a process is ``tests/scenarios/<subject>_scenario.py``, one pattern for all (a script
  holding several cases takes their names on its command line).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.helpers.paths import ROOT, SCENARIOS, SRC, TESTS

#: The top of ``tests/``: the source's two packages, the repository's examples and pages, the tree as a whole, the
#: scripts tests start as processes, shared helpers, and data files.
TOP_LEVEL = {"lightning_hpu", "gaudi_standin", "examples", "docs", "repository", "scenarios", "helpers", "data"}
#: The source's packages, whose folders the tests mirror.
PACKAGES = ("lightning_hpu", "gaudi_standin")
#: The longest a file of ``tests/`` may be.
MAX_LINES = 400
#: How a scenario script is named.
SCENARIO_NAME = re.compile(r"[a-z0-9]+(_[a-z0-9]+)*_scenario\.py")


def _folders(root: Path) -> list[Path]:
    return sorted(
        path for path in root.rglob("*") if path.is_dir() and "__pycache__" not in path.parts and path != root
    )


def has_code(folder: Path) -> bool:
    """Whether ``folder`` holds a module besides ``__init__.py``, or an ``__init__.py`` defining a function or class."""
    for path in folder.glob("*.py"):
        if path.name != "__init__.py":
            return True
        definitions = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        if any(isinstance(node, definitions) for node in ast.parse(path.read_text()).body):
            return True
    return False


def source_folders_without_tests(src: Path, tests: Path) -> list[str]:
    """The folders of ``src`` (each package's root included) with code and no ``test_*.py`` at their path in
    ``tests``."""
    missing = []
    for package in PACKAGES:
        for folder in [src / package, *_folders(src / package)]:
            relative = folder.relative_to(src)
            if has_code(folder) and not any((tests / relative).glob("test_*.py")):
                missing.append(f"src/{relative}/ has code but tests/{relative}/ holds no tests")
    return missing


def test_each_source_folder_with_code_has_its_tests_at_its_path() -> None:
    missing = source_folders_without_tests(SRC, TESTS)
    assert not missing, "\n".join(missing)


def test_a_source_folder_without_tests_is_seen(tmp_path: Path) -> None:
    (tmp_path / "src" / "lightning_hpu" / "tested").mkdir(parents=True)
    (tmp_path / "src" / "lightning_hpu" / "tested" / "x.py").write_text("")
    (tmp_path / "src" / "lightning_hpu" / "untested").mkdir()
    (tmp_path / "src" / "lightning_hpu" / "untested" / "__init__.py").write_text("def f() -> None: ...\n")
    (tmp_path / "src" / "lightning_hpu" / "data_only").mkdir()
    (tmp_path / "src" / "lightning_hpu" / "data_only" / "__init__.py").write_text('"""Names only."""\n')
    (tmp_path / "tests" / "lightning_hpu" / "tested").mkdir(parents=True)
    (tmp_path / "tests" / "lightning_hpu" / "tested" / "test_x.py").write_text("")
    (tmp_path / "src" / "gaudi_standin").mkdir()
    assert source_folders_without_tests(tmp_path / "src", tmp_path / "tests") == [
        "src/lightning_hpu/untested/ has code but tests/lightning_hpu/untested/ holds no tests"
    ]


def test_no_file_of_the_tests_is_over_the_line_limit() -> None:
    long = [
        f"{path.relative_to(ROOT)} has {lines} lines"
        for path in sorted(TESTS.rglob("*.py"))
        if "__pycache__" not in path.parts and (lines := len(path.read_text().splitlines())) > MAX_LINES
    ]
    assert not long, f"split these (at most {MAX_LINES} lines each): " + "; ".join(long)


def test_scenario_scripts_follow_one_naming_pattern() -> None:
    names = sorted(path.name for path in SCENARIOS.glob("*.py") if path.name != "__init__.py")
    assert names, "tests/scenarios/ holds the scripts tests start"
    wrong = [name for name in names if not SCENARIO_NAME.fullmatch(name)]
    assert not wrong, f"name these <subject>_scenario.py: {wrong}"


def test_each_test_folder_of_a_package_mirrors_a_source_folder() -> None:
    for package in PACKAGES:
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
