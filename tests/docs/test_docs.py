"""The documentation: a short README whose links resolve, a site that builds offline without a warning, an API entry
for every public name, a troubleshooting list of errors that matches the code, and figures that exist.

The code blocks and commands of the README and the docs are run by test_readme_snippets.py and
test_readme_commands.py.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.paths import ROOT

README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(path for path in DOCS.rglob("*.md") if "_build" not in path.parts)]
#: The user guide's pages issue 33 asks for (others' pages join them through docs/conf.py's GUIDE_PAGES).
GUIDE = [
    "getting-started",
    "run-on-gaudi",
    "cpu-standin",
    "accelerator-and-devices",
    "single-device",
    "ddp",
    "deepspeed",
    "sharded",
    "context-parallelism",
    "lightning-strategy-objects",
    "precision",
    "hpu-graphs",
    "compile",
    "streams-and-events",
    "profiling",
    "throughput-and-mfu",
    "recipes-bucketing-checkpoints",
    "scaling-out",
    "litgpt",
    "coming-from-lightning-habana",
    "coming-from-optimum-habana",
    "troubleshooting",
    "faq",
    "examples",
    "supported-versions",
    "bridge-coverage",
    "benchmarks",
    "development",
]


def _public_names(package_init: Path) -> list[str]:
    """The ``__all__`` list of a package's ``__init__.py``, read without importing it."""
    for node in ast.parse(package_init.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return list(ast.literal_eval(node.value))
    raise AssertionError(f"{package_init} has no __all__")


def _api_entries() -> dict[str, set[str]]:
    """The names each ``autosummary`` of docs/api.md lists, by its ``currentmodule``."""
    entries: dict[str, set[str]] = {}
    module = ""
    for line in (DOCS / "api.md").read_text().splitlines():
        if match := re.match(r"\.\. currentmodule:: (\S+)", line):
            module = match.group(1)
        elif re.match(r"^   [A-Za-z_]\w*$", line):
            entries.setdefault(module, set()).add(line.strip())
    return entries


def test_the_readme_is_a_front_page_whose_links_resolve() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 200, "README.md is the front page: at most 200 lines, the rest goes to docs/"
    assert "bash scripts/setup.sh" in text and "bash scripts/test.sh" in text and "bash scripts/docs.sh" in text
    assert "bash scripts/test.sh" in (ROOT / ".ci" / "run").read_text(), ".ci/run runs the README's test command"
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if re.match(r"[a-z]+:", target):
                continue
            assert (page.parent / target).exists(), f"{page.relative_to(ROOT)} links to {target}, which is missing"


def test_the_index_lists_every_page_in_plain_markdown() -> None:
    """On GitHub the toctree directives show as code: the index's plain list is what a reader there can follow."""
    index = (DOCS / "index.md").read_text()
    pages = [path for path in sorted((DOCS / "guide").glob("*.md")) if not path.stem.startswith("_")]
    pages += [DOCS / "api.md", DOCS / "architecture.md", DOCS / "bridge-api.md", DOCS / "changelog.md"]
    for page in pages:
        link = f"]({page.relative_to(DOCS).as_posix()})"
        assert link in index, f"docs/index.md's page list has no link to {page.name}"
    assert (
        "(https://github.com/lightning-hpu/lightning-hpu/blob/main/docs/guide/_errors.md)"
        in (DOCS / "guide" / "troubleshooting.md").read_text()
    ), "troubleshooting links the error list for readers on GitHub, where {include} shows as code"


def test_each_migration_page_shows_a_complete_program() -> None:
    """The programs test_readme_snippets.py runs: a migration page must show one, not only fragments."""
    for page in ("coming-from-lightning-habana", "coming-from-optimum-habana"):
        text = (DOCS / "guide" / f"{page}.md").read_text()
        assert "```python\n# run: LIGHTNING_HPU_BACKEND=cpu" in text, f"{page}.md shows no complete program"
        assert "> **Before you start**" in text, f"{page}.md lost its prerequisites box"


def test_every_public_name_has_an_api_entry() -> None:
    entries = _api_entries()
    for package, init in [
        ("lightning_hpu", ROOT / "src" / "lightning_hpu" / "__init__.py"),
        ("lightning_hpu.fabric", ROOT / "src" / "lightning_hpu" / "fabric" / "__init__.py"),
    ]:
        missing = set(_public_names(init)) - entries.get(package, set())
        assert not missing, f"docs/api.md lists no entry for {package}.{sorted(missing)}: add them to its autosummary"
    # lightning_hpu.optimum's names are lightning_hpu's, listed under its own heading too.
    api = (DOCS / "api.md").read_text()
    optimum = api[api.index("## `lightning_hpu.optimum`") :]
    for name in _public_names(ROOT / "src" / "lightning_hpu" / "optimum" / "__init__.py"):
        assert name in entries["lightning_hpu"] and f"lightning_hpu.optimum import {name}" in optimum, name


def test_the_troubleshooting_list_of_errors_matches_the_code() -> None:
    spec = importlib.util.spec_from_file_location("error_catalogue", ROOT / "scripts" / "error_catalogue.py")
    assert spec is not None and spec.loader is not None
    catalogue = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = catalogue  # its dataclass looks its module up there
    spec.loader.exec_module(catalogue)
    errors = catalogue.collect()
    assert len(errors) > 100, "the catalogue found the package's errors"
    assert any(error.kind == "HPUConfigurationError" for error in errors)
    assert catalogue.PAGE.read_text() == catalogue.render(errors), (
        "docs/guide/_errors.md no longer matches the errors in src/lightning_hpu: run python scripts/error_catalogue.py"
    )
    assert "_errors.md" in (DOCS / "guide" / "troubleshooting.md").read_text()


def test_every_figure_the_docs_show_exists_and_names_its_command() -> None:
    shown = 0
    for page in PAGES:
        text = page.read_text()
        for match in re.finditer(r"```\{figure\} (\S+)\n(.*?)```", text, re.DOTALL):
            shown += 1
            figure = (page.parent / match.group(1)).resolve()
            assert figure.is_file() and figure.stat().st_size > 1000, f"{page.name}: {match.group(1)} is missing"
            assert "benchmarks/" in match.group(2) or "scripts/figures.sh" in match.group(2), (
                f"{page.name}: the caption of {match.group(1)} names the command that produced it"
            )
    assert shown >= 6, "the benchmarks page shows the six comparison figures"


@pytest.mark.slow
def test_the_documentation_builds_offline_without_a_warning(tmp_path: Path, python_executable: str) -> None:
    """Sphinx runs in the preloaded interpreter (``tests/helpers/preloaded_python.py``): its API pages import the
    package, which a fresh interpreter would pay 8-15 s of a core for."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("LIGHTNING_HPU_", "PT_HPU_"))}
    env["PYTHON"] = python_executable
    out = tmp_path / "html"
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "docs.sh"), str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, f"bash scripts/docs.sh failed (warnings are errors):\n{done.stderr[-4000:]}"
    assert (out / "searchindex.js").is_file(), "the site is searchable"
    for page in GUIDE:
        assert (out / "guide" / f"{page}.html").is_file(), f"the user guide has no page {page}"
    for package, init in [
        ("lightning_hpu", ROOT / "src" / "lightning_hpu" / "__init__.py"),
        ("lightning_hpu.fabric", ROOT / "src" / "lightning_hpu" / "fabric" / "__init__.py"),
    ]:
        for name in _public_names(init):
            assert (out / "api" / f"{package}.{name}.html").is_file(), f"no API page for {package}.{name}"
    toctree = (out / "index.html").read_text()
    assert all(f"guide/{page}.html" in toctree for page in GUIDE), "every guide page is in the index's toctree"


def test_the_link_check_finds_a_broken_anchor_and_a_missing_page(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("check_links", ROOT / "scripts" / "check_links.py")
    assert spec is not None and spec.loader is not None
    check_links = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check_links)
    (tmp_path / "api").mkdir()
    api_page = '<dl><dt id="lightning_hpu.A">A</dt></dl><a href="#lightning_hpu.A">itself</a>'
    (tmp_path / "api" / "a.html").write_text(api_page)
    (tmp_path / "_modules").mkdir()
    source = tmp_path / "_modules" / "a.html"
    source.write_text('<a class="viewcode-back" href="../api/a.html#lightning_hpu.A">[docs]</a>')
    (tmp_path / "index.html").write_text('<a href="api/a.html">A</a> <a href="https://example.com/#x">out</a>')
    assert check_links.broken_links(tmp_path) == []
    source.write_text('<a class="viewcode-back" href="../api/a.html#lightning_hpu.fabric.A">[docs]</a>')
    (tmp_path / "index.html").write_text('<a href="api/b.html">B</a>')
    assert check_links.broken_links(tmp_path) == [
        "_modules/a.html: ../api/a.html#lightning_hpu.fabric.A (no such anchor)",
        "index.html: api/b.html (no such file)",
    ]
    assert "scripts/check_links.py" in (ROOT / "scripts" / "docs.sh").read_text(), "the docs build runs the check"


def test_the_examples_gallery_lists_every_example() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "examples_gallery.py"), "--check"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    gallery = (DOCS / "guide" / "examples.md").read_text()
    for example in sorted((ROOT / "examples").glob("*.py")):
        assert f"## `examples/{example.name}`" in gallery, example.name
