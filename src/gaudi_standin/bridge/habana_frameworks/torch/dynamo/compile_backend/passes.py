"""``habana_frameworks.torch.dynamo.compile_backend.passes`` on the stand-in: the graph logger of ``hpu_backend``.

``logger`` is the bridge's graph logger: after ``logger.set_store_data(True)``, ``logger.data`` holds, for each HPU
graph ``torch.compile(backend="hpu_backend")`` builds, the placement of each node and the graph's TorchScript IR
(``####PyTorch-generated JIT IR graph for this HPU graph:####``, then lines such as ``%mul : Tensor =
aten::mul(%x, %y)``), written by :mod:`gaudi_standin.compiler.graph_log`. The bridge's FX passes themselves (its
partitioner, fusions and reinplacing) are its compiler's internals, which the stand-in does not have.
"""

from __future__ import annotations

from gaudi_standin.compiler import graph_log

__all__ = ["logger"]

logger = graph_log.GRAPH_LOGGER
