"""Profiling HPU runs, the Lightning-free parts of :class:`~lightning_hpu.HPUProfiler`'s report
(the profiler itself is :mod:`lightning_hpu.pytorch.profilers`).

Imports (the layering test checks this paragraph): no Lightning package (Lightning-free, with all it imports); of
this package, ``runtime`` and ``support``.
"""

from lightning_hpu.profiler.environment import HABANA_PROFILE_ENV, check_habana_profile
from lightning_hpu.profiler.report import OperatorCost
from lightning_hpu.support.old_paths import moved_names_of

__all__ = ["HABANA_PROFILE_ENV", "OperatorCost", "check_habana_profile"]

#: 0.1.0's names that moved out of this package, read from their new path with a DeprecationWarning.
__getattr__ = moved_names_of(__name__)
