"""The Trainer side of lightning-hpu: accelerator, strategies, precision and checkpoint plugins, profiler, callbacks.

Mirrors :mod:`lightning_hpu.fabric` module for module where both sides have the thing (as ``lightning.pytorch`` and
``lightning.fabric`` do); the pieces both build on live below them (the runtime seam, the distributed pieces, the
device features, HPU graphs, fp8, compilation, data). Every public name is also at ``lightning_hpu.*``.

Imports (the layering test checks this paragraph): of Lightning, ``lightning.fabric`` and ``lightning.pytorch``; of
this package, ``check``, ``checkpoint``, ``compile``, ``device``, ``distributed``, ``fp8``, ``hpu_graphs``,
``precision``, ``profiler``, ``runtime`` and ``support``.
"""

from lightning_hpu.support.old_paths import names_of

#: lightning-habana's names of this module path (docs/guide/coming-from-lightning-habana.md), read when first asked.
__getattr__ = names_of(__name__)
