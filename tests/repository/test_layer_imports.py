"""What each layer of ``lightning_hpu`` may import, checked statically from the source files (nothing is imported).

Each layer (a folder, and the command line) imports exactly what its docstring's "Imports" paragraph and the table of
docs/architecture.md say: the same Lightning packages and the same layers of the package, no more and no fewer; and a
layer, or a module, that says it is Lightning-free reaches no Lightning package.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.paths import SRC
from tests.helpers.source_imports import (
    PACKAGE,
    import_closure,
    imported_modules,
    module_file,
    module_name,
    own_modules,
)

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
