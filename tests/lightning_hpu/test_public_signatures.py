"""Every public class shows what it takes: each argument its docstring documents is in ``inspect.signature``.

A mixin's arguments hidden behind ``**kwargs`` are invisible to ``help()``, editors and LightningCLI (jsonargparse),
so this walks the public API of both trees (``lightning_hpu.__all__``; ``lightning_hpu.fabric``, its strategies and
plugins) and compares the names of each class's ``Args:`` section with the named parameters of its signature.
"""

from __future__ import annotations

import inspect
import pydoc
import re

import pytest

import lightning_hpu
from lightning_hpu import fabric
from lightning_hpu.fabric import plugins as fabric_plugins
from lightning_hpu.fabric import strategies as fabric_strategies

#: A Google-style ``Args:`` section, up to the next unindented line.
_ARGS_SECTION = re.compile(r"^Args:\n((?:[ \t]+.*\n?|\n)*)", re.MULTILINE)
#: An entry of it: ``name:`` or ``name, other, ...:`` at the section's first indentation.
_ENTRY = re.compile(r"^(?P<indent>[ \t]+)(?P<names>[*\w][\w*, ]*):(?:\s|$)")


def documented_arguments(cls: type) -> set[str]:
    """The names the ``Args:`` sections of ``cls``'s and its ``__init__``'s docstrings document (not ``**kwargs``)."""
    names: set[str] = set()
    init = cls.__dict__.get("__init__")
    for doc in (cls.__doc__, getattr(init, "__doc__", None)):
        section = _ARGS_SECTION.search(inspect.cleandoc(doc or ""))
        if section is None:
            continue
        lines = [line for line in section.group(1).splitlines() if line.strip()]
        first_indent = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
        for line in lines:
            entry = _ENTRY.match(line)
            if entry and len(entry.group("indent")) == first_indent:
                names.update(name.strip() for name in entry.group("names").split(","))
    return {name for name in names if name and not name.startswith("*")}


def visible_arguments(cls: type) -> set[str]:
    """The named parameters of ``inspect.signature(cls)`` (what ``help()`` and jsonargparse read)."""
    parameters = inspect.signature(cls).parameters.values()
    return {p.name for p in parameters if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}


def _public_classes() -> dict[str, type]:
    found: dict[str, type] = {}
    for module in (lightning_hpu, fabric, fabric_strategies, fabric_plugins):
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.isclass(value) and not issubclass(value, (BaseException, dict)):  # errors, TypedDict options
                found.setdefault(f"{value.__module__}.{value.__qualname__}", value)
    return found


PUBLIC_CLASSES = _public_classes()


def test_the_walk_reaches_both_trees_and_reads_their_docstrings() -> None:
    """The walk is not empty and the parser reads entries naming several arguments (else the next test is empty)."""
    names = set(PUBLIC_CLASSES)
    assert "lightning_hpu.pytorch.strategies.parallel.HPUParallelStrategy" in names
    assert "lightning_hpu.fabric.strategies.parallel.HPUParallelStrategy" in names
    assert "lightning_hpu.fabric.strategies.model_parallel.HPUModelParallelStrategy" in names
    assert "lightning_hpu.pytorch.profilers.hpu.HPUProfiler" in names
    assert {"fast_ddp", "reduce_dtype", "timeout", "ddp_comm_wrapper", "start_method", "bucket_cap_mb"} <= (
        documented_arguments(lightning_hpu.HPUParallelStrategy)
    )
    assert sum(bool(documented_arguments(cls)) for cls in PUBLIC_CLASSES.values()) >= 20


@pytest.mark.parametrize("name", sorted(PUBLIC_CLASSES))
def test_the_signature_lists_every_documented_argument(name: str) -> None:
    cls = PUBLIC_CLASSES[name]
    hidden = documented_arguments(cls) - visible_arguments(cls)
    assert not hidden, f"{name}{inspect.signature(cls)} hides the documented {sorted(hidden)}"


@pytest.mark.parametrize("cls", [lightning_hpu.HPUParallelStrategy, fabric_strategies.HPUParallelStrategy])
def test_help_shows_fast_ddp_and_the_gaudi_ddp_keywords(cls: type) -> None:
    text = pydoc.render_doc(cls, renderer=pydoc.plaintext)
    for shown in ("fast_ddp: 'bool' = False", "bucket_cap_mb: 'int | None' = None", "process_group_backend"):
        assert shown in text
