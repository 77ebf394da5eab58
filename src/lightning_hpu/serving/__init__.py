"""Serving on HPUs with the rest of Lightning-AI's stack: LitServe's ``LitServer(accelerator="hpu")`` and ``"auto"``
(inference workers each bound to their own HPU module), and LitGPT's Python API (``LLM.load``, ``LLM.distribute``),
which ``litgpt serve`` builds on.

Installed means working, as for Lightning: :mod:`lightning_hpu_autoload` calls :func:`register` once ``litserve`` or
``litgpt.api`` has been imported (off with ``LIGHTNING_HPU_AUTOLOAD=0``, which leaves both as they are). Each patch
wraps a method once, after checking that it exists, and changes nothing for a program that asks for no HPU.

Imports (the layering test checks this paragraph): no Lightning package by name; of this package, ``device``,
``distributed`` and ``runtime``.
"""

from __future__ import annotations

import importlib

#: The module whose import registers each patch, and the module of this package that applies it.
PATCHES = {
    "litserve": "lightning_hpu.serving.litserve_connector",
    "litgpt.api": "lightning_hpu.serving.litgpt_api",
}


def register(name: str) -> None:
    """Teach the library module ``name`` (a key of :data:`PATCHES`, imported already) the HPU; once per process."""
    importlib.import_module(PATCHES[name]).install()
