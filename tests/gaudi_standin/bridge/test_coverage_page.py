"""docs/guide/bridge-coverage.md stays true: every name it lists as served resolves on the stand-in, every name it
lists as not emulated does not (so that a name served later moves to the served list).

Names served in lazy mode only are checked against the graph API the package serves in lazy mode.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

import pytest

import gaudi_standin.bridge.habana_frameworks.torch  # noqa: F401 (the device and torch.ops.hpu, as importing the bridge)
from gaudi_standin.bridge.habana_frameworks.torch import hpu
from tests.helpers.paths import DOCS

PAGE = DOCS / "guide" / "bridge-coverage.md"
LAZY_ONLY_MODULES = ("habana_frameworks.torch.hpu.", "habana_frameworks.torch.core.hpu.")


def _sections() -> dict[str, list[str]]:
    """The page's ``## `` sections, each with the dotted names its bullets start with (several per bullet)."""
    sections: dict[str, list[str]] = {}
    current: list[str] = []
    bullet = False
    for line in PAGE.read_text().splitlines():
        if line.startswith("## "):
            current = sections.setdefault(line[3:].strip(), [])
            continue
        if line.startswith("- "):
            bullet = True
        elif not line.startswith("  "):
            bullet = False
        if bullet:
            text = line.split(":", 1)[0] if ": " in line else line
            current.extend(re.findall(r"`((?:habana_frameworks|torch)\.[\w.]+)`", text))
    return sections


def resolve(name: str) -> Any:
    """The object ``name`` names: its longest importable module prefix, then attributes (``AttributeError`` else)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:end]))
        except ImportError:
            continue
        for attribute in parts[end:]:
            found = getattr(found, attribute)
        return found
    raise AttributeError(name)


SECTIONS = _sections()
SERVED = SECTIONS["Served in eager and lazy mode"] + SECTIONS["Also served (other clients of the bridge)"]


def test_the_page_lists_names_in_each_section() -> None:
    assert len(SERVED) > 80
    assert len(SECTIONS["Served in lazy mode only"]) == 7
    assert len(SECTIONS["Not emulated"]) >= 8


@pytest.mark.parametrize("name", SERVED)
def test_a_served_name_resolves(name: str) -> None:
    assert resolve(name) is not None


@pytest.mark.parametrize("name", SECTIONS["Served in lazy mode only"])
def test_a_lazy_mode_name_is_in_the_graph_api(name: str) -> None:
    assert name.startswith(LAZY_ONLY_MODULES)
    assert name.rsplit(".", 1)[1] in hpu.GRAPH_API


@pytest.mark.parametrize("name", SECTIONS["Not emulated"])
def test_a_name_listed_as_not_emulated_is_missing(name: str) -> None:
    with pytest.raises(AttributeError):
        resolve(name)
