"""``habana_frameworks.torch.dynamo.debug_utils.logger`` on the stand-in: the compile backend's loggers.

Each call of ``get_compile_backend_logger()`` makes a new ``PT_COMPILE`` logger, as the bridge's does: the backend's
modules (``compile_backend.passes``, ``compile_backend.shared_layer``) each hold their own, with its own ``data``.
"""

from __future__ import annotations

from gaudi_standin.compiler.logs import get_compile_backend_logger, get_fx_graph_logger

__all__ = ["get_compile_backend_logger", "get_fx_graph_logger"]
