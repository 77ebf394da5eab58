"""``habana_frameworks.torch.dynamo.compile_backend.shared_layer`` on the stand-in: the eager-fallback decision.

``logger`` is the bridge's fallback logger: after ``logger.set_store_data(True)``, ``logger.data`` holds one line
``[PT_COMPILE] Node: <name> requires fallback: <True|False>`` per op of each graph ``hpu_backend`` compiles.
``is_eager_fallback_required(node)`` answers for one node of such a graph, by the rule of
:mod:`gaudi_standin.compiler.graph_log`, logs the answer, and refuses a fallback that
``config.use_eager_fallback`` does not allow, as the bridge does.
"""

from __future__ import annotations

import torch

from gaudi_standin.compiler import config, graph_log

__all__ = ["hpu_ds_fallback_list", "hpu_fallback_op_list", "is_eager_fallback_required", "logger"]

logger = graph_log.FALLBACK_LOGGER

hpu_fallback_op_list = set(graph_log.FALLBACK_OPS)
hpu_ds_fallback_list = set(graph_log.DYNAMIC_SHAPE_FALLBACK_OPS)


def is_eager_fallback_required(node: torch.fx.Node, is_dynamic: bool = False) -> bool:
    """Whether ``node`` (a ``call_function`` node of a graph ``hpu_backend`` compiles) runs eagerly on the host."""
    assert node.op == "call_function"
    do_fallback = graph_log.requires_fallback(node) or (
        is_dynamic and graph_log.op_name(node) in graph_log.DYNAMIC_SHAPE_FALLBACK_OPS
    )
    logger.debug("Node: %s requires fallback: %s", node, do_fallback)
    assert config.use_eager_fallback or not do_fallback, f"Node: {node} requires fallback: {do_fallback}"
    return do_fallback
