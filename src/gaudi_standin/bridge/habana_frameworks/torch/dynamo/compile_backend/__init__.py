"""``habana_frameworks.torch.dynamo.compile_backend`` on the stand-in: the package of ``hpu_backend``.

Its submodules ``config`` (the backend's settings, which ``torch.compile(..., options=...)`` patches) and
``experimental`` (``enable_compiled_autograd``) are imported with it, as the bridge's are; the backend itself
(:mod:`gaudi_standin.compiler.hpu_backend`) is registered as TorchDynamo's backend registry loads.
"""

from __future__ import annotations

from gaudi_standin.bridge.habana_frameworks.torch.dynamo.compile_backend import config, experimental

__all__ = ["config", "experimental"]
