"""The recipe of a graph ``hpu_backend`` compiled: the stand-in's ``recipe_compiler.HabanaGraphModule``.

On a Gaudi each HPU graph of a compiled model is lowered to TorchScript, compiled by the graph compiler into a
recipe, and launched by a ``HabanaGraphModule``; with ``config.use_compiled_recipes`` off the backend skips that and
runs the FX graph op by op. The stand-in's recipe runs the same FX graph's ops on the device (its kernels are the
CPU's), so the two paths compute alike; what differs is what is counted (recipes, in ``hpu.metrics``) and that a
recipe is launched through this module, as on the bridge (a program or test that watches
``HabanaGraphModule.__call__`` sees it called exactly when a Gaudi would launch a recipe).
"""

from __future__ import annotations

import itertools
from typing import Any

import torch

_graph_ordinal = itertools.count()


def next_graph_name() -> str:
    """The name the bridge gives the next graph it compiles (``fx_graph_0000``, ``fx_graph_0001``, ...)."""
    return f"fx_graph_{next(_graph_ordinal):04d}"


class HabanaGraphModule(torch.nn.Module):
    """A compiled graph (``graph_module``) launched as one recipe; ``jit_ir`` is its IR as the bridge logs it."""

    def __init__(
        self,
        jit_ir: str | None,
        graph_module: torch.fx.GraphModule,
        parent_graph_name: str,
        outputs_metadata: Any = None,
        symbolic_metadata: Any = None,
        is_training: bool = False,
        is_dynamic: bool = False,
    ) -> None:
        super().__init__()
        self.jit_ir = jit_ir
        self._graph_module = graph_module
        self._parent_graph_name = parent_graph_name
        self._is_training = is_training
        self._is_dynamic = is_dynamic

    def __call__(self, *args: Any) -> Any:
        """Launch the recipe: a single output is returned as it is, several as a tuple (as the bridge's launch)."""
        outputs = self._graph_module(*args)
        return outputs[0] if isinstance(outputs, (tuple, list)) and len(outputs) == 1 else tuple(outputs)


def get_callable_recipe(
    jit_ir: str | None,
    graph_module: torch.fx.GraphModule,
    parent_graph_name: str,
    is_training: bool = False,
    is_dynamic: bool = False,
) -> torch.nn.Module:
    """The compiled recipe of ``graph_module``, or the graph itself (op by op) when recipes are off in the config."""
    from gaudi_standin.compiler import config

    if config.use_compiled_recipes:
        return HabanaGraphModule(
            jit_ir, graph_module, parent_graph_name, is_training=is_training, is_dynamic=is_dynamic
        )
    return graph_module
