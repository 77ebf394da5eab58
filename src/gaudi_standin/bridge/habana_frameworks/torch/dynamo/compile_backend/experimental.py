"""``habana_frameworks.torch.dynamo.compile_backend.experimental``: ``enable_compiled_autograd``.

As in the bridge: from now on TorchDynamo compiles the backward passes too (compiled autograd), with ``hpu_backend``
and ``options={"inference": False}``; DDP's graph splitting switches to the Python reducer. Call it before any
``torch.compile``.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

import torch
from torch._dynamo import compiled_autograd

__all__ = ["enable_compiled_autograd"]

_log = logging.getLogger(__name__)


def enable_compiled_autograd(**kwargs: Any) -> None:
    """Compile the backward graphs with ``hpu_backend`` (``kwargs`` go to that ``torch.compile``)."""
    _log.warning("Enabling CompiledAutograd for hpu_backend with torch.compile")

    def compiler_fn(graph: torch.fx.GraphModule) -> Any:
        return torch.compile(graph, backend="hpu_backend", options={"inference": False}, **kwargs)

    torch._C._dynamo.compiled_autograd.set_autograd_compiler(
        functools.partial(compiled_autograd.AutogradCompilerInstance, compiler_fn), False
    )
    torch._dynamo.reset()
    torch._dynamo.config.optimize_ddp = "python_reducer"
    torch._C._set_autograd_fallback_mode("nothing")
