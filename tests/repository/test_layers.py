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

What each layer of ``lightning_hpu`` may import, as its docstring says, is checked in ``test_layer_imports.py``; both
read the source through :mod:`tests.helpers.source_imports`.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

from tests.helpers.paths import SRC
from tests.helpers.source_imports import (
    PACKAGE,
    STANDIN,
    chain,
    find_circle,
    import_closure,
    imported_modules,
    is_under,
    module_name,
    own_modules,
    with_parent_packages,
)

#: The longest a source file (Python or C++) may be.
MAX_LINES = 350
#: The suffixes of the stand-in device library's C++ sources.
CPP_SUFFIXES = (".cpp", ".h")

FORBIDDEN_IN_FABRIC = "lightning.pytorch"
#: What the stand-in, a bridge below the package, must never import.
FORBIDDEN_IN_STANDIN = ("lightning", "lightning_hpu", "torchmetrics")


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
        if is_under(module, FORBIDDEN_IN_STANDIN)
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
        if is_under(module, ("gaudi_standin",))
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


def own_sources() -> list[Path]:
    """Every source file of both packages: the Python modules and the stand-in device library's C++ files."""
    cpp = sorted(path for path in STANDIN.rglob("*") if path.suffix in CPP_SUFFIXES and "__pycache__" not in path.parts)
    return [*own_modules(), *cpp]


@pytest.mark.parametrize("path", own_sources(), ids=lambda p: str(p.relative_to(SRC)))
def test_every_source_file_is_at_most_350_lines(path: Path) -> None:
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(SRC)} has {lines} lines (at most {MAX_LINES}): split it"


def test_the_size_rule_counts_the_cpp_files() -> None:
    assert any(path.suffix == ".cpp" for path in own_sources()) and any(path.suffix == ".h" for path in own_sources())


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
        if is_under(imported, (other,))
    ]
    assert not crossing, "\n".join(crossing)
    assert own_modules(TRAINER_TREE) and own_modules(FABRIC_TREE), "the trees are not where the check expects them"


def test_only_the_trainer_layers_import_lightning_pytorch() -> None:
    offending = [
        f"{module_name(path)} imports {imported}"
        for path in own_modules(PACKAGE)
        if (this := module_name(path)) != "lightning_hpu" and not is_under(this, TRAINER_LAYERS)
        for imported in imported_modules(path)
        if is_under(
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
                if is_under(alias.name, LIGHTNING_PACKAGES):
                    names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and not node.level and is_under(node.module or "", LIGHTNING_PACKAGES):
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
        if not is_under(module_name(path), ("lightning_hpu.integration",))
        for found in assignments_to_lightning(path)
    ]
    assert not offending, "\n".join(offending)


# --- the stand-in's folders, from the bottom up -----------------------------------------------------------------


def standin_levels() -> list[set[str]]:
    """The stand-in's folders, level by level from the bottom up, as its package docstring lists them: each bullet of
    its list names one level's folders (in double backticks, before the bullet's first colon)."""
    docstring = ast.get_docstring(ast.parse((STANDIN / "__init__.py").read_text())) or ""
    listing = docstring.split("Its folders, from the bottom up:", 1)[1].split("\n\n", 2)[1]
    bullets = [line[2:] for line in listing.splitlines() if line.startswith("- ")]
    return [set(re.findall(r"``(\w+)``", bullet.split(":", 1)[0])) for bullet in bullets]


def upward_imports(levels: list[set[str]], files: list[tuple[str, Path]]) -> list[str]:
    """Each import of a stand-in module (``files``: name and path), anywhere in its file (inside functions too), of a
    folder above its own."""
    rank = {folder: index for index, level in enumerate(levels) for folder in level}
    upward = []
    for name, path in files:
        parts = name.split(".")
        if len(parts) < 2:
            continue
        for imported in imported_modules(path):
            target = imported.split(".")
            if target[0] == "gaudi_standin" and len(target) > 1 and rank[target[1]] > rank[parts[1]]:
                upward.append(f"{name} imports {imported}")
    return upward


def test_the_stand_in_docstring_lists_every_folder_once() -> None:
    folders = sorted(path.parent.name for path in STANDIN.glob("*/__init__.py"))
    listed = [folder for level in standin_levels() for folder in level]
    assert sorted(listed) == folders


def test_no_stand_in_module_imports_a_folder_above_its_own() -> None:
    upward = upward_imports(standin_levels(), [(module_name(path), path) for path in own_modules(STANDIN)])
    assert not upward, "arrows back up (move what is needed below, or hand it down):\n" + "\n".join(upward)


def test_an_upward_import_inside_a_function_is_seen(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from gaudi_standin.bridge.habana_frameworks.torch import hpu\n")
    levels = [{"emulator"}, {"compiler"}, {"bridge"}]
    assert upward_imports(levels, [("gaudi_standin.compiler.probe", probe)]) == [
        "gaudi_standin.compiler.probe imports gaudi_standin.bridge.habana_frameworks.torch.hpu"
    ]
    assert upward_imports(levels, [("gaudi_standin.bridge.probe", probe)]) == []
