"""The precision table of the guide and of the architecture page is the one module's: what each name means is said
once, in ``lightning_hpu.precision.names``, and the pages show it as ``markdown_table()`` writes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from lightning_hpu.precision.names import markdown_table
from tests.helpers.paths import ROOT

START = "<!-- the table of lightning_hpu.precision.names.markdown_table() -->\n"
END = "\n<!-- end of the table -->"


def _table_of(page: Path) -> str:
    text = page.read_text()
    assert START in text and END in text, f"{page.relative_to(ROOT)} has no precision table between its markers"
    return text.split(START, 1)[1].split(END, 1)[0]


@pytest.mark.parametrize("page", ["docs/guide/precision.md", "docs/architecture.md"])
def test_the_page_shows_the_precision_table_of_the_names_module(page: str) -> None:
    assert _table_of(ROOT / page) == markdown_table(), f"{page}: paste lightning_hpu.precision.names.markdown_table()"


def test_the_table_names_what_each_name_means() -> None:
    rows = {row.split(" | ", 1)[0]: row for row in markdown_table().splitlines()[2:]}
    assert "| bf16 | bf16 | true (autocast around fp8) | yes |" in rows['| `"transformer-engine"`']
    assert "| fp32 | bf16 | mixed (autocast) | yes |" in rows['| `"fp8"` (HPU only)']
    assert "refused on the HPU" in rows['| `"64-true"` (`"64"`)']
