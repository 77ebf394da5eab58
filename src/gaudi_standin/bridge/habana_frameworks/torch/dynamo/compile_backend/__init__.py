"""``habana_frameworks.torch.dynamo.compile_backend`` on the stand-in: the package of ``hpu_backend``.

Its submodules ``config`` (:mod:`.compile_config`, the backend's settings) and ``experimental``
(:mod:`.compile_experimental`, ``enable_compiled_autograd``) are imported with it, as the bridge's are; the backend
itself is registered when ``habana_frameworks.torch`` is imported (:mod:`gaudi_standin.compiler.hpu_backend`).
"""

from __future__ import annotations

from gaudi_standin.bridge.habana_frameworks.torch.dynamo.compile_backend import config, experimental

__all__ = ["config", "experimental"]
