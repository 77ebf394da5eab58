"""Sphinx configuration: MyST Markdown pages, the API reference from docstrings, the Furo theme.

Built offline by ``bash scripts/docs.sh`` (``sphinx-build -W --keep-going -n``): warnings, broken internal references
included, fail the build. No intersphinx: its inventories would be fetched from the network, which CI does not have,
so names of torch, Lightning and other packages are shown as text (``nitpick_ignore_regex`` below).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS.parent / "src"))
# Importing lightning_hpu for autodoc opens no device; the stand-in backend keeps it off the Gaudi bridge's path.
os.environ.setdefault("LIGHTNING_HPU_BACKEND", "cpu")

project = "lightning-hpu"
author = "lightning-hpu developers"
copyright = "lightning-hpu developers, Apache-2.0"  # noqa: A001 (Sphinx's name)
release = "0.1.0"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "README.md"]

# MyST: anchors for headings down to ### so that `page.md#heading` links resolve (and are checked).
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence", "deflist"]

# The API reference (api.md) lists every public name; autosummary writes one page per name into api/.
autosummary_generate = True
autosummary_imported_members = True


def _names_shared_with_trainer() -> list[str]:
    """Fabric names that are the very objects lightning_hpu exports: documented once, under lightning_hpu."""
    import lightning_hpu
    import lightning_hpu.fabric

    return [
        name
        for name in lightning_hpu.fabric.__all__
        if getattr(lightning_hpu, name, None) is getattr(lightning_hpu.fabric, name)
    ]


autosummary_context = {"shared_with_trainer": _names_shared_with_trainer()}
autodoc_default_options = {"members": True, "show-inheritance": True, "inherited-members": False}
autodoc_typehints = "description"
autodoc_member_order = "bysource"
# Optional dependencies of a few modules (Ray, DeepSpeed) need not be installed to build the docs.
autodoc_mock_imports: list[str] = []

nitpicky = True
# Without intersphinx, references to other projects' names cannot resolve: they are shown as plain text. Every
# reference into lightning_hpu itself must resolve.
nitpick_ignore_regex = [
    (r"py:.*", r"(torch|lightning|lightning_fabric|typing|typing_extensions|collections|contextlib|datetime|pathlib"
     r"|os|enum|deepspeed|ray|types|abc|io|logging|dataclasses|jsonargparse|numpy|concurrent|threading|warnings)"
     r"(\..*)?"),
    (r"py:.*", r"(Any|Callable|Iterable|Iterator|Mapping|Sequence|Literal|Optional|Union|Self|TypeVar|Generator"
     r"|ParamSpec|NoneType|T|_T|P|R|Tensor|Module|Optimizer|Path|timedelta|ModuleType|Exception|Warning"
     r"|RuntimeError|ValueError|TypeError|UserWarning|ImportError)"),
    # Base classes and type aliases inside lightning_hpu's modules (not public names: no API entry of their own).
    (r"py:.*", r"lightning_hpu\.[a-z_]+\..*"),
    (r"py:.*", r"_?[A-Z][A-Za-z0-9]*|_?[A-Z_]+"),
    # Helpers named in docstrings without their module, Lightning's `pl.` alias, and napoleon's reading of a
    # property's first words as its type ("lightning-habana's flag: ...").
    (r"py:.*", r"[a-z_]+|pl\..*|.*\s.*"),
]
napoleon_use_ivar = True

html_theme = "furo"
html_title = "lightning-hpu"
html_static_path = ["_static"]
templates_path = ["_templates"]
html_show_sourcelink = False

# The user guide's pages, in reading order. The toctree of index.md is written from this list at build time
# (the `{guide-toctree}` marker): a name whose page does not exist yet is left out, and a page of docs/guide/ that
# the list does not name is added at the end, so no page is orphaned and none is required. To place a new page,
# add its name here (the lead adds: supported-versions, streams-and-events, litgpt, bridge-coverage,
# coming-from-optimum-habana, context-parallelism).
GUIDE_PAGES = [
    "getting-started",
    "cpu-standin",
    "accelerator-and-devices",
    "single-device",
    "ddp",
    "deepspeed",
    "sharded",
    "context-parallelism",
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
    "versions",
    "supported-versions",
    "bridge-coverage",
    "benchmarks",
    "development",
]
GUIDE_MARKER = "{guide-toctree}"


def guide_toctree_entries() -> list[str]:
    """The guide's pages that exist, in GUIDE_PAGES order, then the unlisted ones alphabetically."""
    present = {path.stem for path in (DOCS / "guide").glob("*.md")}
    listed = [name for name in GUIDE_PAGES if name in present]
    return [f"guide/{name}" for name in listed + sorted(present - set(listed))]


def _write_guide_toctree(app: object, docname: str, source: list[str]) -> None:
    if docname == "index" and GUIDE_MARKER in source[0]:
        source[0] = source[0].replace(GUIDE_MARKER, "\n".join(guide_toctree_entries()))


def setup(app):  # type: ignore[no-untyped-def]
    app.connect("source-read", _write_guide_toctree)
