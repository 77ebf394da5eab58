"""lightning-hpu's modules built against ``pytorch_lightning`` and ``lightning_fabric``, from the same source files.

Lightning makes its standalone distributions from one source by renaming imports (``lightning.pytorch`` becomes
``pytorch_lightning``, ``lightning.fabric`` becomes ``lightning_fabric``); so does this module, when a module is
first imported: :class:`StandaloneFinder` serves ``lightning_hpu.standalone.<name>`` by running the source of
``lightning_hpu.<name>`` with those names renamed, and with ``lightning_hpu.<x>`` renamed to
``lightning_hpu.standalone.<x>`` for every module that is renamed too.

A module is renamed when it reaches Lightning through its imports (:func:`renamed_modules`); the modules that reach
none (the runtime seam, HPU graphs, fp8, data, ...) are shared, so there is one backend per process and an
``HPUGraph`` is the same class under both namespaces. Tracebacks point at the real source files.
"""

from __future__ import annotations

import ast
import importlib
import importlib.abc
import importlib.machinery
import re
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

SOURCE = "lightning_hpu"
STANDALONE = "lightning_hpu.standalone"
ROOT = Path(__file__).resolve().parents[1]
#: Lightning's unified names and the standalone packages they are renamed to.
RENAMES = {"lightning.pytorch": "pytorch_lightning", "lightning.fabric": "lightning_fabric"}
#: Shared whatever they import: the runtime seam holds the process's one backend and its settings.
ALWAYS_SHARED = ("lightning_hpu.runtime",)
LIGHTNING = ("lightning", "pytorch_lightning", "lightning_fabric")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _source_file(module: str) -> Path | None:
    base = ROOT.parent.joinpath(*module.split("."))
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def _imports(path: Path) -> set[str]:
    """The modules ``path`` names in its import statements (``from a import b`` gives ``a`` and ``a.b``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_bytes())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _under(module: str, names: tuple[str, ...]) -> bool:
    return any(module == name or module.startswith(name + ".") for name in names)


@cache
def renamed_modules() -> frozenset[str]:
    """The modules of lightning-hpu that reach Lightning through their imports, and the packages that hold them (the
    top-level package excluded)."""
    modules = {
        _module_name(path): path
        for path in ROOT.rglob("*.py")
        if "__pycache__" not in path.parts and path.parent != ROOT.parent
    }
    modules.pop(SOURCE, None)
    modules = {name: path for name, path in modules.items() if not _under(name, (STANDALONE,))}
    imports = {name: _imports(path) for name, path in modules.items()}
    renamed = {name for name, found in imports.items() if any(_under(m, LIGHTNING) for m in found)}
    changed = True
    while changed:
        changed = False
        for name, found in imports.items():
            if name not in renamed and any(m in renamed for m in found):
                renamed.add(name)
                changed = True
    parents = {name.rpartition(".")[0] for name in renamed} - {SOURCE}  # a renamed module's package is renamed too
    return frozenset(name for name in renamed | parents if not _under(name, ALWAYS_SHARED))


_LIGHTNING_NAME = re.compile(r"\blightning\.(pytorch|fabric)\b")
_PACKAGE_NAME = re.compile(r"\blightning_hpu((?:\.\w+)*)")
_FROM_TOP = re.compile(r"^(\s*)from lightning_hpu import ", re.MULTILINE)


def _rename_package_reference(match: re.Match[str]) -> str:
    """``lightning_hpu.a.b.c`` renamed to its standalone build when its longest module prefix is renamed."""
    parts = match.group(1).split(".")[1:]
    for end in range(len(parts), 0, -1):
        if f"{SOURCE}.{'.'.join(parts[:end])}" in renamed_modules():
            return f"{STANDALONE}{match.group(1)}"
    return match.group(0)


def rename(source: str) -> str:
    """``source`` as it reads against the standalone packages and the renamed modules."""
    source = _LIGHTNING_NAME.sub(lambda m: RENAMES[m.group(0)], source)
    source = _FROM_TOP.sub(rf"\1from {STANDALONE} import ", source)
    return _PACKAGE_NAME.sub(_rename_package_reference, source)


class RenamedSourceLoader(importlib.abc.Loader):
    """Runs the renamed source of one renamed module."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def exec_module(self, module: ModuleType) -> None:
        code = compile(rename(self.path.read_text()), str(self.path), "exec", dont_inherit=True)
        exec(code, module.__dict__)
        autoload = sys.modules.get("lightning_hpu_autoload")  # installed: it may have waited for this module
        if autoload is not None:
            autoload.standalone_ran(module.__name__)


class SharedLoader(importlib.abc.Loader):
    """Serves a module that reaches no Lightning under its standalone name as the very module of ``lightning_hpu``
    (``from lightning_hpu.standalone.distributed import elastic``)."""

    def __init__(self, source_name: str) -> None:
        self.source_name = source_name

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module(self.source_name)

    def exec_module(self, module: ModuleType) -> None:
        """The shared module has run already."""


class StandaloneFinder(importlib.abc.MetaPathFinder):
    """Serves ``lightning_hpu.standalone.<name>``: the renamed source of a renamed module ``lightning_hpu.<name>``,
    the module itself where it is shared."""

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith(STANDALONE + "."):
            return None
        source_name = SOURCE + fullname[len(STANDALONE) :]
        source_file = _source_file(source_name)
        if source_file is None:
            return None
        if source_name not in renamed_modules():
            return importlib.machinery.ModuleSpec(fullname, SharedLoader(source_name))
        is_package = source_file.name == "__init__.py"
        spec = importlib.machinery.ModuleSpec(
            fullname, RenamedSourceLoader(source_file), origin=str(source_file), is_package=is_package
        )
        if is_package:
            spec.submodule_search_locations = []  # submodules come from this finder, never from a folder
        spec.has_location = True
        return spec


def install() -> None:
    """Put :class:`StandaloneFinder` first on ``sys.meta_path`` (once)."""
    if not any(isinstance(finder, StandaloneFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, StandaloneFinder())
