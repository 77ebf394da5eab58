"""Checks every link between the pages of a built documentation site, anchors included.

``python scripts/check_links.py OUTPUT_DIR`` (``scripts/docs.sh`` runs it after Sphinx): every ``href`` of every
HTML page that points inside the site (not ``http:``, ``mailto:`` and the like) must name a file that exists and,
when it has a ``#fragment``, an element of that page with that ``id``. The source pages' "[docs]" back-links into the
API reference are links like any other. Exits 1 listing the broken ones, one a line.
"""

from __future__ import annotations

import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


class _Page(HTMLParser):
    """The ``id``s of one page and the ``href``s of its links."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name == "id" or (name == "name" and tag == "a"):
                self.ids.add(value)
            elif name == "href" and tag in ("a", "link"):
                self.links.append(value)


def _read(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8", errors="replace"))
    return page


def broken_links(site: Path) -> list[str]:
    """``<page>: <href>`` for every link of ``site`` whose file or anchor does not exist."""
    pages = {path.resolve(): _read(path) for path in sorted(site.rglob("*.html"))}
    broken = []
    for path, page in pages.items():
        for href in page.links:
            parts = urlsplit(href)
            if parts.scheme or parts.netloc or href.startswith(("javascript:", "mailto:")):
                continue
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            if target.is_dir():
                target = target / "index.html"
            where = f"{path.relative_to(site.resolve())}: {href}"
            if not target.exists():
                broken.append(f"{where} (no such file)")
            elif parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else _read(target).ids
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{where} (no such anchor)")
    return broken


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: python scripts/check_links.py OUTPUT_DIR", file=sys.stderr)
        return 2
    site = Path(sys.argv[1])
    broken = broken_links(site)
    for line in broken:
        print(f"broken link: {line}", file=sys.stderr)
    if broken:
        print(f"check_links.py: {len(broken)} broken link(s) in {site}", file=sys.stderr)
        return 1
    print(f"check_links.py: every link and anchor of {site} resolves")
    return 0


if __name__ == "__main__":
    sys.exit(main())
