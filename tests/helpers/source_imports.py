"""The source's modules and what they import, read statically with ``ast`` (nothing is imported): the layering
tests' reading of ``src/`` (``tests/repository/test_layers.py``, ``test_layer_imports.py``).

Every ``import`` statement counts, at module level or inside a function or class body, anywhere in the file.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.helpers.paths import SRC

PACKAGE = SRC / "lightning_hpu"
STANDIN = SRC / "gaudi_standin"
#: The top-level packages of this repository.
PACKAGES = ("lightning_hpu", "gaudi_standin")


def module_file(module: str) -> Path | None:
    """The source file of ``lightning_hpu`` module ``module``, ``None`` for other modules and missing ones."""
    parts = module.split(".")
    if parts[0] not in PACKAGES:
        return None
    base = SRC.joinpath(*parts)
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def module_name(path: Path) -> str:
    parts = list((path.relative_to(SRC) if path.is_relative_to(SRC) else Path(path.name)).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path) -> Iterator[str]:
    """The absolute names of every module an ``import`` statement of ``path`` names (anywhere in the file).

    ``from package import name`` yields ``package.name`` when that is a module of this package, else ``package``.
    """
    this = module_name(path)
    package = this if path.name == "__init__.py" else this.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                yield submodule if module_file(submodule) is not None else source


def with_parent_packages(module: str) -> list[str]:
    """``module`` and the packages Python runs to import it, but not the top-level package."""
    parts = module.split(".")
    return [".".join(parts[:end]) for end in range(2, len(parts) + 1)] if parts[0] in PACKAGES else [module]


def import_closure(root: str) -> dict[str, str | None]:
    """Every module reached from ``root`` through import statements, each with the module that imports it."""
    seen: dict[str, str | None] = {root: None}
    todo = [root]
    while todo:
        current = todo.pop()
        path = module_file(current)
        if path is None:
            continue
        for imported in imported_modules(path):
            for module in with_parent_packages(imported):
                if module not in seen:
                    seen[module] = current
                    todo.append(module)
    return seen


def chain(seen: dict[str, str | None], module: str) -> list[str]:
    links = [module]
    while (parent := seen[links[-1]]) is not None:
        links.append(parent)
    return links[::-1]


def own_modules(*packages: Path) -> list[Path]:
    """The Python modules of ``packages`` (both top-level packages by default)."""
    roots = packages or (PACKAGE, STANDIN)
    return sorted(path for root in roots for path in root.rglob("*.py") if "__pycache__" not in path.parts)


def is_under(module: str, names: tuple[str, ...]) -> bool:
    return any(module == name or module.startswith(name + ".") for name in names)


def find_circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` (module -> modules it imports), or ``None``."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (found := visit(target)) is not None:
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)) is not None:
            return found
    return None
