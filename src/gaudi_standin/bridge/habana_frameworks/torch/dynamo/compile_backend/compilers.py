"""``habana_frameworks.torch.dynamo.compile_backend.compilers`` on the stand-in: ``gaudi_standin.compiler.compilers``.

The stand-in's ``hpu_backend`` lives below the bridge's modules (:mod:`gaudi_standin.compiler`) and calls its graph
compilers there. This bridge module is that module object (it takes its place in ``sys.modules``), so a function
patched through the bridge's name is the one the backend calls, as on a Gaudi.
"""

import sys

from gaudi_standin.compiler import compilers as _compilers

sys.modules[__name__] = _compilers
