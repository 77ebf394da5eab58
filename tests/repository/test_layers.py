"""The package's layers, checked statically from the source files with ``ast`` (nothing is imported).

* ``lightning_hpu.fabric`` and everything it imports never imports ``lightning.pytorch``, as Lightning's own
  ``lightning.fabric`` does not: every ``import`` statement counts, at module level or inside a function, and so do
  the packages Python runs on the way to a module (``lightning_hpu.pytorch.strategies`` for
  ``lightning_hpu.pytorch.strategies.x``),
  except the top-level ``lightning_hpu`` package, which, like ``lightning/__init__.py``, wires everything together.
* The CPU stand-in (``gaudi_standin``) is a layer below everything: it imports neither Lightning nor
  ``lightning_hpu``, and no module of ``lightning_hpu`` imports it (the package reaches it through
  ``habana_frameworks``, as it reaches a Gaudi's bridge).
* ``lightning_hpu_module_ids`` (both packages read ``HABANA_VISIBLE_MODULES`` and ``HLS_MODULE_ID`` with it) imports
  only the standard library.
* One class implements the runtime seam (``HPUBackend``): the Gaudi backend, which drives the stand-in too.
* The modules of both packages import each other without a circle, and each is at most :data:`MAX_LINES` lines long.
* Each layer of ``lightning_hpu`` (a folder, and the command line) imports exactly what its docstring's "Imports"
  paragraph and the table of docs/architecture.md say: the same Lightning packages and the same layers of the package,
  no more and no fewer; and a layer, or a module, that says it is Lightning-free reaches no Lightning package.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.paths import SRC

SRC = SRC
PACKAGE = SRC / "lightning_hpu"
STANDIN = SRC / "gaudi_standin"
#: The top-level packages of this repository.
PACKAGES = ("lightning_hpu", "gaudi_standin")

#: The longest a module may be.
MAX_LINES = 350

FORBIDDEN_IN_FABRIC = "lightning.pytorch"
#: What the stand-in, a bridge below the package, must never import.
FORBIDDEN_IN_STANDIN = ("lightning", "lightning_hpu", "torchmetrics")


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


def _is_under(module: str, names: tuple[str, ...]) -> bool:
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


def test_lightning_hpu_fabric_never_imports_lightning_pytorch() -> None:
    seen = import_closure("lightning_hpu.fabric")
    for fabric_module in [module_name(path) for path in (PACKAGE / "fabric").rglob("*.py")]:
        for module, parent in import_closure(fabric_module).items():
            seen.setdefault(module, parent)
    offending = sorted(m for m in seen if m == FORBIDDEN_IN_FABRIC or m.startswith(FORBIDDEN_IN_FABRIC + "."))
    chains = [" -> ".join(chain(seen, module)) for module in offending]
    assert not chains, "lightning_hpu.fabric reaches lightning.pytorch:\n" + "\n".join(chains)


def test_the_stand_in_imports_neither_lightning_nor_the_package() -> None:
    offending = [
        f"{module_name(path)} imports {module}"
        for path in own_modules(STANDIN)
        for module in imported_modules(path)
        if _is_under(module, FORBIDDEN_IN_STANDIN)
    ]
    assert not offending, "\n".join(offending)


def test_the_module_below_both_packages_imports_only_the_standard_library() -> None:
    """``lightning_hpu_module_ids`` is read by ``lightning_hpu`` and the stand-in alike: it may import neither (nor
    Lightning)."""
    imported = list(imported_modules(SRC / "lightning_hpu_module_ids.py"))
    assert imported and all(module.split(".")[0] in sys.stdlib_module_names for module in imported), imported


def test_no_package_module_imports_the_stand_in() -> None:
    offending = [
        f"{module_name(path)} imports {module}"
        for path in own_modules(PACKAGE)
        for module in imported_modules(path)
        if _is_under(module, ("gaudi_standin",))
    ]
    assert not offending, "\n".join(offending)


def test_one_class_implements_the_runtime_seam() -> None:
    implementations = [
        f"{module_name(path)}.{node.name}"
        for path in own_modules()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef)
        and any(getattr(base, "id", getattr(base, "attr", None)) == "HPUBackend" for base in node.bases)
    ]
    assert implementations == ["lightning_hpu.runtime.bridge.BridgeBackend"]


def test_the_closure_follows_imports_inside_functions_and_parent_packages(tmp_path: Path) -> None:
    code = "def f():\n    from lightning_hpu.pytorch.strategies import parallel\n    import lightning.pytorch\n"
    path = tmp_path / "probe.py"
    path.write_text(code)
    assert set(imported_modules(path)) >= {"lightning_hpu.pytorch.strategies.parallel", "lightning.pytorch"}
    assert with_parent_packages("lightning_hpu.pytorch.strategies.parallel") == [
        "lightning_hpu.pytorch",
        "lightning_hpu.pytorch.strategies",
        "lightning_hpu.pytorch.strategies.parallel",
    ]


def test_no_import_circles_among_the_package_modules() -> None:
    graph: dict[str, set[str]] = {}
    names = {module_name(path) for path in own_modules()}
    for path in own_modules():
        this = module_name(path)
        graph[this] = {module for module in imported_modules(path) if module in names and module != this}
    circle = find_circle(graph)
    assert circle is None, "import circle: " + " -> ".join(circle or [])


def test_find_circle_sees_a_circle() -> None:
    assert find_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_circle({"a": {"b"}, "b": set()}) is None


@pytest.mark.parametrize("path", own_modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_every_module_is_at_most_350_lines(path: Path) -> None:
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(SRC)} has {lines} lines (at most {MAX_LINES}): split it"


TRAINER_TREE = PACKAGE / "pytorch"
FABRIC_TREE = PACKAGE / "fabric"
#: The layers that may import ``lightning.pytorch``: the Trainer tree, the glue into Lightning's connectors and
#: registries (which wires the Trainer and Fabric alike), and, like the top-level package that exports both trees,
#: optimum-habana's ``GaudiConfig``, whose ``trainer_arguments()`` and ``fabric_arguments()`` build the arguments of
#: each (it imports the Trainer's plugins only inside ``trainer_arguments``), and the command line
#: (``lightning_hpu.__main__``: ``lightning-hpu check`` trains with the Trainer), which sits above everything.
TRAINER_LAYERS = (
    "lightning_hpu.pytorch",
    "lightning_hpu.integration",
    "lightning_hpu.optimum.gaudi_config",
    "lightning_hpu.__main__",
)


def defined_classes(path: Path) -> set[str]:
    """The classes ``path`` defines or serves (a module whose class lives below both trees names it in ``__all__``),
    named as either side would: without a ``Fabric`` prefix or ``Plugin`` suffix."""
    body = ast.parse(path.read_text()).body
    names = {node.name for node in body if isinstance(node, ast.ClassDef)}
    for node in body:
        if isinstance(node, ast.Assign) and any(getattr(target, "id", None) == "__all__" for target in node.targets):
            names |= {element.value for element in ast.walk(node.value) if isinstance(element, ast.Constant)}
    return {name.removeprefix("Fabric").removesuffix("Plugin") for name in names if name[:1].isupper()}


def lightning_trainer_has(relative: Path) -> bool:
    """Whether Lightning's own ``lightning/pytorch`` has a module at ``relative`` (Lightning's mirror)."""
    import lightning

    return (Path(lightning.__file__).parent / "pytorch" / relative).exists()


def fabric_modules_with_a_trainer_counterpart() -> list[Path]:
    """The ``fabric/`` modules the Trainer side has too: where Lightning has both, or where a class of the same name
    is defined under ``pytorch/``."""
    trainer_classes = {name for path in own_modules(TRAINER_TREE) for name in defined_classes(path)}
    return [
        path
        for path in own_modules(FABRIC_TREE)
        if path.name != "__init__.py"
        and (lightning_trainer_has(path.relative_to(FABRIC_TREE)) or defined_classes(path) & trainer_classes)
    ]


def test_the_trainer_tree_mirrors_the_fabric_tree() -> None:
    paired = fabric_modules_with_a_trainer_counterpart()
    assert {"accelerator.py", "strategies/fsdp.py", "plugins/precision.py"} <= {
        str(path.relative_to(FABRIC_TREE)) for path in paired
    }, "the mirror check misses pairs it must see: is the tree where it expects?"
    missing = [
        f"fabric/{path.relative_to(FABRIC_TREE)} has no pytorch/{path.relative_to(FABRIC_TREE)}"
        for path in paired
        if not (TRAINER_TREE / path.relative_to(FABRIC_TREE)).is_file()
    ]
    assert not missing, "\n".join(missing)


def test_the_two_trees_stand_side_by_side() -> None:
    """Neither tree imports the other: what both build on (Fabric's accelerator and precision plugin, the strategy
    mixins, the checkpoint IO) is below them, so each reads on its own."""
    crossing = [
        f"{module_name(path)} imports {imported}"
        for tree, other in ((TRAINER_TREE, "lightning_hpu.fabric"), (FABRIC_TREE, "lightning_hpu.pytorch"))
        for path in own_modules(tree)
        for imported in imported_modules(path)
        if _is_under(imported, (other,))
    ]
    assert not crossing, "\n".join(crossing)
    assert own_modules(TRAINER_TREE) and own_modules(FABRIC_TREE), "the trees are not where the check expects them"


def test_only_the_trainer_layers_import_lightning_pytorch() -> None:
    offending = [
        f"{module_name(path)} imports {imported}"
        for path in own_modules(PACKAGE)
        if (this := module_name(path)) != "lightning_hpu" and not _is_under(this, TRAINER_LAYERS)
        for imported in imported_modules(path)
        if _is_under(
            imported, ("lightning.pytorch", "pytorch_lightning", "lightning_hpu.pytorch", "lightning_hpu.integration")
        )
    ]
    assert not offending, "\n".join(offending)


LIGHTNING_PACKAGES = ("lightning", "pytorch_lightning", "lightning_fabric")


def lightning_bound_names(tree: ast.Module) -> set[str]:
    """The names a module binds to Lightning's modules and objects (``import lightning.pytorch as pl``,
    ``from lightning.fabric.strategies import fsdp``, ``from lightning.pytorch import Trainer``)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _is_under(alias.name, LIGHTNING_PACKAGES):
                    names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and not node.level and _is_under(node.module or "", LIGHTNING_PACKAGES):
            names.update(alias.asname or alias.name for alias in node.names)
    return names


def assignments_to_lightning(path: Path) -> list[str]:
    """``name.attribute = ...`` and ``setattr(name, ...)`` in ``path`` where ``name`` is one of Lightning's."""
    tree = ast.parse(path.read_text())
    bound = lightning_bound_names(tree)

    def root(node: ast.expr) -> str | None:
        while isinstance(node, ast.Attribute):
            node = node.value
        return node.id if isinstance(node, ast.Name) else None

    found = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        found += [
            f"{module_name(path)}:{node.lineno} assigns to {ast.unparse(target)}"
            for target in targets
            if isinstance(target, ast.Attribute) and root(target) in bound
        ]
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("setattr", "delattr")
            and node.args
            and root(node.args[0]) in bound
        ):
            found.append(f"{module_name(path)}:{node.lineno} calls {node.func.id} on {ast.unparse(node.args[0])}")
    return found


def test_only_integration_assigns_to_lightnings_modules_and_classes() -> None:
    assert any(assignments_to_lightning(path) for path in own_modules(PACKAGE / "integration")), (
        "integration/ patches Lightning: the check should see its assignments"
    )
    offending = [
        found
        for path in own_modules(PACKAGE)
        if not _is_under(module_name(path), ("lightning_hpu.integration",))
        for found in assignments_to_lightning(path)
    ]
    assert not offending, "\n".join(offending)


# --- what each layer may import, as its docstring and docs/architecture.md say --------------------------------------

ARCHITECTURE = SRC.parent / "docs" / "architecture.md"
#: How each layer's docstring starts the paragraph that says what it imports.
IMPORTS_PARAGRAPH = "Imports (the layering test checks this paragraph): "
#: Lightning's packages, by the name the source imports them under (the standalone names are Lightning's too).
LIGHTNING_NAMES = {
    "lightning": "lightning",
    "lightning.pytorch": "lightning.pytorch",
    "lightning.fabric": "lightning.fabric",
    "pytorch_lightning": "lightning.pytorch",
    "lightning_fabric": "lightning.fabric",
    "lightning_utilities": "lightning_utilities",
}
#: The top-level package: only ``lightning_hpu/__init__.py`` wires every layer together; a layer naming it imports all.
TOP = "lightning_hpu"


def layer_files() -> dict[str, Path]:
    """Every layer of the package and the file whose docstring says what it imports: its folders and its command."""
    found = {path.parent.name: path for path in sorted(PACKAGE.glob("*/__init__.py"))}
    found["__main__"] = PACKAGE / "__main__.py"
    return found


def layer_of(module: str) -> str | None:
    """The layer of a module of the package (``lightning_hpu.pytorch.strategies.x`` -> ``pytorch``), ``TOP`` for the
    package itself, ``None`` for modules of other packages."""
    parts = module.split(".")
    if parts[0] != TOP:
        return None
    return parts[1] if len(parts) > 1 else TOP


def lightning_package(module: str) -> str | None:
    """Which of Lightning's packages ``module`` belongs to (``lightning.fabric.x`` -> ``lightning.fabric``)."""
    parts = module.split(".")
    for name in (".".join(parts[:2]), parts[0]):
        if name in LIGHTNING_NAMES:
            return LIGHTNING_NAMES[name]
    return None


@dataclass(frozen=True)
class LayerImports:
    lightning: frozenset[str]
    layers: frozenset[str]
    lightning_free: bool


def read_names(lightning_text: str, package_text: str) -> LayerImports:
    """The Lightning packages and layers named in double or single backticks, and whether it says "Lightning-free"."""
    lightning = frozenset(re.findall(r"`+([\w.]+)`+", lightning_text))
    layers = frozenset(name.rstrip("/").removesuffix(".py") for name in re.findall(r"`+([\w./]+)`+", package_text))
    return LayerImports(lightning, layers, "Lightning-free" in lightning_text)


def declared_in_docstring(path: Path) -> LayerImports | None:
    """What the "Imports" paragraph of ``path``'s docstring says (``None`` without one)."""
    docstring = ast.get_docstring(ast.parse(path.read_text())) or ""
    if IMPORTS_PARAGRAPH not in docstring:
        return None
    paragraph = docstring.split(IMPORTS_PARAGRAPH, 1)[1].split("\n\n", 1)[0]
    lightning_text, _, package_text = paragraph.partition(";")
    return read_names(lightning_text, package_text)


def declared_in_architecture() -> dict[str, LayerImports]:
    """The rows of docs/architecture.md's table "What each layer may import"."""
    section = ARCHITECTURE.read_text().split("## What each layer may import", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, LayerImports] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`") and cells[0].endswith(("/`", ".py`")):
            rows[cells[0].strip("`").rstrip("/").removesuffix(".py")] = read_names(cells[1], cells[2])
    return rows


def actual_imports(layer: str) -> LayerImports:
    """What the layer's modules import themselves (Lightning packages, other layers), and whether anything they
    import, at any depth, reaches Lightning (the package itself counts as reaching it: it wires in every layer)."""
    lightning: set[str] = set()
    layers: set[str] = set()
    reaches = False
    for path in own_modules(PACKAGE):
        module = module_name(path)
        if layer_of(module) != layer or (layer == "__main__") != (path.name == "__main__.py"):
            continue
        for imported in imported_modules(path):
            if (package := lightning_package(imported)) is not None:
                lightning.add(package)
            elif (other := layer_of(imported)) is not None and other != layer:
                layers.add(other)
        reaches = reaches or reaches_lightning(module)
    return LayerImports(frozenset(lightning), frozenset(layers), not reaches)


def reaches_lightning(module: str) -> bool:
    """Whether ``module`` or anything it imports, at any depth, imports Lightning, or the package itself (which wires
    in every layer, Lightning's glue among them)."""
    for name in import_closure(module):
        if lightning_package(name) is not None:
            return True
        path = module_file(name)
        if path is not None and TOP in imported_modules(path):
            return True
    return False


def test_every_layer_imports_exactly_what_its_docstring_says() -> None:
    wrong = []
    for layer, path in layer_files().items():
        declared = declared_in_docstring(path)
        if declared is None:
            wrong.append(f"{path.relative_to(SRC)}: its docstring has no paragraph starting {IMPORTS_PARAGRAPH!r}")
        elif declared != (actual := actual_imports(layer)):
            wrong.append(f"{layer}: the docstring says {declared}, the imports are {actual}")
    assert not wrong, "\n".join(wrong)


def test_the_architecture_page_says_what_the_docstrings_say() -> None:
    page = declared_in_architecture()
    docstrings = {layer: declared_in_docstring(path) for layer, path in layer_files().items()}
    assert page == docstrings


def test_a_module_that_says_it_is_lightning_free_is() -> None:
    """Any docstring saying "Lightning-free" speaks of its own module (of its whole layer, in a layer's docstring):
    nothing it imports, at any depth, reaches Lightning."""
    layers = {path: layer for layer, path in layer_files().items()}

    def reaches(path: Path) -> bool:
        if path in layers:
            return not actual_imports(layers[path]).lightning_free
        return reaches_lightning(module_name(path))

    wrong = [
        module_name(path)
        for path in own_modules(PACKAGE)
        if "Lightning-free" in (ast.get_docstring(ast.parse(path.read_text())) or "") and reaches(path)
    ]
    assert not wrong, f"these say they are Lightning-free but reach Lightning: {wrong}"


def test_the_layer_check_sees_a_lightning_import() -> None:
    assert lightning_package("lightning.fabric.utilities.rank_zero") == "lightning.fabric"
    assert lightning_package("pytorch_lightning.callbacks") == "lightning.pytorch"
    assert lightning_package("lightning_hpu.device") is None and layer_of("lightning_hpu.device.selection") == "device"
    assert actual_imports("device").lightning == {"lightning.fabric"}
    assert not actual_imports("device").lightning_free and actual_imports("runtime").lightning_free
    assert not actual_imports("standalone").lightning_free  # it imports the package itself
    assert reaches_lightning("lightning_hpu.device.accelerator") and not reaches_lightning("lightning_hpu.runtime")
