"""``habana_frameworks.torch.dynamo.compile_backend.config`` on the stand-in: :mod:`gaudi_standin.compiler.config`.

The stand-in's ``hpu_backend`` lives below the bridge's modules (:mod:`gaudi_standin.compiler`) and reads its settings
there. This bridge module is that module object (it takes its place in ``sys.modules``), so a setting made through
the bridge's name (``config.patch(...)``, ``configuration_flags[...]``) is the one the backend reads, as on a Gaudi.
"""

import sys

from gaudi_standin.compiler import config as _config

sys.modules[__name__] = _config
