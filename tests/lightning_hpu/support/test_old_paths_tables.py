"""The old paths' tables are data (literals only, each target in the grammar the finder reads), and one finder serves
them all: lightning-hpu 0.1.0's and lightning-habana's."""

from __future__ import annotations

import ast
import sys
from collections.abc import Mapping

from lightning_hpu.support import old_paths, old_paths_tables
from tests.helpers.paths import SRC

TABLES = SRC / "lightning_hpu" / "support" / "old_paths_tables.py"


def test_the_tables_module_holds_literals_only() -> None:
    tree = ast.parse(TABLES.read_text())
    docstring, *assignments = tree.body
    assert isinstance(docstring, ast.Expr) and isinstance(docstring.value, ast.Constant)
    names = []
    for node in assignments:
        assert isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None, (
            f"line {node.lineno} of {TABLES.name} is not a table: the tables hold data, the finder the code"
        )
        assert ast.literal_eval(node.value) == getattr(old_paths_tables, node.target.id)
        names.append(node.target.id)
    assert set(names) == {name for name in vars(old_paths_tables) if name.isupper()}


def _targets() -> list[str | bool]:
    tables: list[Mapping[str, str | bool]] = [
        *old_paths_tables.MOVED_NAMES.values(),
        *old_paths_tables.HABANA_MODULES.values(),
        old_paths_tables.HABANA_FABRIC_PACKAGE,
    ]
    return [target for table in tables for target in table.values()]


def test_every_target_resolves(standin: object) -> None:
    for target in _targets():
        assert isinstance(target, bool) or (":" in target and target.count("()") <= 1), target
        assert old_paths.resolve(target) is not None, target
    assert old_paths.resolve("lightning_hpu:HPUAccelerator.auto_device_count") is old_paths.resolve(
        "lightning_hpu.pytorch.accelerator:HPUAccelerator.auto_device_count"
    )
    assert old_paths.resolve("lightning_hpu.support.lightning_habana_values:torchvision_available()") in (True, False)
    assert old_paths.resolve(False) is False


def test_one_finder_serves_both_tables() -> None:
    finders = [finder for finder in sys.meta_path if isinstance(finder, old_paths.OldPathFinder)]
    assert len(finders) == 1
    assert finders[0].find_spec("lightning_hpu.strategies") is not None  # 0.1.0's
    assert finders[0].find_spec("lightning_hpu.utils.resources") is not None  # lightning-habana's
    assert finders[0].find_spec("lightning_hpu.no_such_module") is None
