"""``hpu_backend``'s graph compilers: the bridge's ``habana_frameworks.torch.dynamo.compile_backend.compilers`` on the
stand-in (that bridge module is this module object, so patching a function under either name patches the backend's).

AOTAutograd hands ``hpu_backend`` each forward, backward and inference graph through these functions, which all
call ``hpu_compiler_inner(graph_module, example_inputs, is_training, is_backward)``, as on the bridge (the stand-in's
is :func:`gaudi_standin.compiler.inner.compile_inner`; the bridge's graph freezing for inference,
``use_graph_freezing``, changes no value and is not emulated).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from gaudi_standin.compiler.inner import compile_inner

__all__ = ["hpu_compiler_inner", "hpu_inference_compiler", "hpu_training_compiler_bw", "hpu_training_compiler_fw"]


def hpu_compiler_inner(
    graph_module: torch.fx.GraphModule, example_inputs: list[Any], is_training: bool, is_backward: bool
) -> Callable[..., Any]:
    """Compile one graph: a boxed callable that runs it (as one recipe when ``use_compiled_recipes``)."""
    return compile_inner(graph_module, example_inputs, is_training, is_backward)


def hpu_training_compiler_fw(graph_module: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
    return hpu_compiler_inner(graph_module, example_inputs, True, False)


def hpu_training_compiler_bw(graph_module: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
    return hpu_compiler_inner(graph_module, example_inputs, True, True)


def hpu_inference_compiler(
    graph_module: torch.fx.GraphModule, example_inputs: list[Any], dyn_graph_module: torch.fx.GraphModule | None = None
) -> Callable[..., Any]:
    return hpu_compiler_inner(graph_module, example_inputs, False, False)
