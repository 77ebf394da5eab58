"""The ``hpu`` namespace of ``torch.ops`` on the stand-in: each op defined once with the bridge's schema.

The bridge registers its custom ops (``hpu::...``) in C++ with a device kernel and a meta function for
``torch.compile``; the stand-in defines the same schemas with :mod:`torch.library`, one reference computation in torch
ops (registered for every backend, so ``hpu`` tensors stay on ``hpu``) and a fake function of the bridge's output
shapes (the reference itself where it reads no tensor value).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

#: The stand-in's fragment of the ``hpu`` operator namespace (kept alive for the process: it owns the definitions).
LIBRARY = torch.library.Library("hpu", "FRAGMENT")


def define(schema: str, compute: Callable[..., Any], fake: Callable[..., Any] | None = None) -> str:
    """Define ``hpu::<schema>``, computed by ``compute`` on every device; return its qualified name."""
    name = schema.split("(", 1)[0]
    LIBRARY.define(schema)
    LIBRARY.impl(name, compute, "CompositeExplicitAutograd")
    qualified = f"hpu::{name}"
    torch.library.register_fake(qualified, fake or compute, lib=LIBRARY)
    return qualified
