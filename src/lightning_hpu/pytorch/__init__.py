"""The Trainer side of lightning-hpu: accelerator, strategies, precision and checkpoint plugins, profiler, callbacks.

Mirrors :mod:`lightning_hpu.fabric` module for module where both sides have the thing (as ``lightning.pytorch`` and
``lightning.fabric`` do); the Lightning-free pieces both build on live below them (``runtime``, ``distributed``,
``device``, ``hpu_graphs``, ``fp8``, ``compile``, ``data``). Every public name is also at ``lightning_hpu.*``.
"""

from lightning_hpu.support.lightning_habana_paths import names_of

#: lightning-habana's names of this module path (docs/guide/coming-from-lightning-habana.md), read when first asked.
__getattr__ = names_of(__name__)
