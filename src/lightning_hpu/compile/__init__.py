"""Eager mode and ``torch.compile`` on HPU, the parts below both trees: where graph compilations are counted, the
peak FLOPs of each generation, and the compile arguments an HPU run takes. The Trainer callbacks (``HPUCompile``,
``HPURecompileMonitor``, ``HPUThroughputMonitor``) are in :mod:`lightning_hpu.pytorch.callbacks`.

Imports (the layering test checks this paragraph): of Lightning, ``lightning.fabric``; of this package,
``precision`` (its table of names alone), ``runtime`` and ``support``.
"""

from lightning_hpu.runtime.compile_backend import CompileInLazyModeError
from lightning_hpu.support.old_paths import moved_names_of

__all__ = ["CompileInLazyModeError"]

#: 0.1.0's names that moved out of this package, read from their new path with a DeprecationWarning.
__getattr__ = moved_names_of(__name__)
