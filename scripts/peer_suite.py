"""Run lightning-habana 1.7's own test suite against lightning-hpu, through an import-renaming layer.

    python scripts/peer_suite.py [--source GIT_DIR_OR_URL] [--ref 1.7.0] [pytest arguments ...]

The peer's ``tests/`` and ``pyproject.toml`` (its pytest settings) at ``--ref`` are exported into
``build/peer/<ref>/`` (cloned from GitHub unless ``--source`` names a git repository), then pytest runs them with
``scripts/peer/lightning_habana_alias.py`` loaded first: it serves every ``lightning_habana.*`` module the tests
import from lightning-hpu, by README's "Coming from lightning-habana" table. Nothing of the peer is changed.

The environment is the peer's CI (its ``.azure/hpu-tests.yml`` at 1.7.0) on the stand-in: a node with two Gaudi2
cards visible (``LIGHTNING_HPU_CPU_DEVICES=2``), Intel Gaudi 1.18's default lazy mode, except ``test_compile.py``
and the FSDP files, which CI runs with ``PT_HPU_LAZY_MODE=0``; ``-W ignore::FutureWarning`` as CI passes it; and
Lightning's mocked MNIST (``PL_USE_MOCKED_MNIST=1``: no download). The last line counts passed items of all
collected (``build/peer/<ref>/report-*.xml`` hold each item's outcome). Not part of ``scripts/test.sh``: it takes
minutes. Pytest arguments (files, ``-k``) replace the default selection of all tests.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

from git_export import export_paths  # a sibling when run as a script

ROOT = Path(__file__).resolve().parent.parent
PEER_URL = "https://github.com/Lightning-AI/lightning-Habana"


def export_suite(source: str, ref: str, dest: Path) -> Path:
    """``tests/`` and ``pyproject.toml`` of the peer at ``ref`` under ``dest`` (kept between runs)."""
    if (dest / "tests").is_dir():
        return dest
    export_paths(source, ref, ["tests", "pyproject.toml"], dest)
    return dest


def summarize(reports: list[Path]) -> tuple[int, int]:
    """Print failures by test file and by first line of their message; return (passed, collected)."""
    outcomes: Counter[str] = Counter()
    failed_by_file: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    # An item run again (the two-card job) takes its last outcome.
    last = {
        (case.get("classname"), case.get("name")): case
        for report in reports
        if report.exists()
        for case in ET.parse(report).iter("testcase")
    }
    for case in last.values():
        problem = next((child for child in case if child.tag in ("failure", "error", "skipped")), None)
        outcome = "passed" if problem is None else problem.tag
        outcomes[outcome] += 1
        if problem is not None and outcome != "skipped":
            failed_by_file[case.get("classname", "").rsplit(".", 1)[0]] += 1
            message = (problem.get("message") or "").strip().splitlines()
            reasons[message[0][:150] if message else "?"] += 1
    for name, count in failed_by_file.most_common():
        print(f"  {count:4d} failed in {name}")
    for reason, count in reasons.most_common(40):
        print(f"  {count:4d} x {reason}")
    total = sum(outcomes.values())
    print(f"peer suite: {outcomes['passed']} passed of {total} items ({dict(outcomes)})")
    return outcomes["passed"], total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", default=PEER_URL, help="lightning-Habana git repository (path or URL)")
    parser.add_argument("--ref", default="1.7.0", help="the release whose tests run (default: 1.7.0)")
    args, pytest_args = parser.parse_known_args(argv)
    suite = export_suite(args.source, args.ref, ROOT / "build" / "peer" / args.ref)
    env = dict(os.environ, LIGHTNING_HPU_BACKEND="cpu", LIGHTNING_HPU_CPU_DEVICES="2", PL_USE_MOCKED_MNIST="1")
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "scripts" / "peer"), str(ROOT / "src"), str(suite), env.get("PYTHONPATH", "")]
    )
    paths = [arg for arg in pytest_args if arg.startswith("tests")] or ["tests"]
    options = [arg for arg in pytest_args if not arg.startswith("tests")]
    in_eager_file = [path for path in paths if path.split("::")[0] in EAGER_FILES]
    eager = in_eager_file + [file for file in EAGER_FILES for path in paths if file.startswith(path.rstrip("/") + "/")]
    lazy = [path for path in paths if path not in in_eager_file]
    reports: list[Path] = []
    for mode, files in (("lazy", lazy), ("eager", eager)):
        if not files:
            continue
        mode_env = dict(env, PT_HPU_LAZY_MODE="1" if mode == "lazy" else "0")
        base = [sys.executable, "-m", "pytest", "-p", "lightning_habana_alias", "-p", "no:cacheprovider", "-q"]
        # A module that cannot be imported fails its items, as in CI, and a hung item fails after 5 minutes.
        base += ["-W", "ignore::FutureWarning", "--continue-on-collection-errors", "--timeout=300", *options]
        if mode == "lazy":  # CI runs the eager files on their own
            base += [f"--ignore={file}" for file in EAGER_FILES]
        # CI runs ``standalone_only`` tests one process each (tests/run_standalone_tests.sh), the rest together.
        reports.append(
            _run([*base, "-m", "not standalone_only", *files], suite / f"report-{mode}.xml", suite, mode_env)
        )
        for index, node in enumerate(_collect([*base, "-m", "standalone_only", *files], suite, mode_env)):
            reports.append(_run([*base, node], suite / f"report-{mode}-standalone-{index}.xml", suite, mode_env))
    # CI's "Multi card(2)" job: these files' ``standalone`` tests again, one process each, with --hpus 2 (lazy mode).
    two_cards = [file for file in MULTI_CARD_FILES if any(_under(file, path) for path in paths)]
    if two_cards:
        base = [sys.executable, "-m", "pytest", "-p", "lightning_habana_alias", "-p", "no:cacheprovider", "-q"]
        base += ["-W", "ignore::FutureWarning", "--timeout=300", "--hpus", "2", *options]
        lazy_env = dict(env, PT_HPU_LAZY_MODE="1")
        for index, node in enumerate(_collect([*base, "-m", "standalone", *two_cards], suite, lazy_env)):
            reports.append(_run([*base, node], suite / f"report-two-cards-{index}.xml", suite, lazy_env))
    summarize(reports)
    return 0


def _under(file: str, path: str) -> bool:
    """Whether the test path ``path`` (a directory, file or item) selects items of ``file``."""
    return file == path.split("::")[0] or file.startswith(path.rstrip("/") + "/")


def _collect(command: list[str], cwd: Path, env: dict[str, str]) -> list[str]:
    """The item ids ``command`` (a pytest command) selects."""
    listing = subprocess.run(
        [*command, "--collect-only"], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    return [line for line in listing.stdout.splitlines() if "::" in line]


def _run(command: list[str], report: Path, cwd: Path, env: dict[str, str]) -> Path:
    report.unlink(missing_ok=True)
    subprocess.run([*command, f"--junitxml={report}"], cwd=cwd, env=env, check=False)
    return report


#: The files whose ``standalone`` tests the peer's CI runs again on two cards; that outcome is the item's.
MULTI_CARD_FILES = (
    "tests/test_pytorch/test_accelerator.py",
    "tests/test_pytorch/test_compile.py",
    "tests/test_pytorch/test_profiler.py",
)

#: The files the peer's CI runs with ``PT_HPU_LAZY_MODE=0``.
EAGER_FILES = (
    "tests/test_pytorch/test_compile.py",
    "tests/test_pytorch/strategies/test_fsdp.py",
    "tests/test_fabric/test_fsdp.py",
)


if __name__ == "__main__":
    sys.exit(main())
