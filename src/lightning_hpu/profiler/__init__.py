"""Profiling HPU runs, the Lightning-free parts of :class:`~lightning_hpu.HPUProfiler`'s report
(the profiler itself is :mod:`lightning_hpu.pytorch.profilers`)."""

from lightning_hpu.profiler.environment import HABANA_PROFILE_ENV, check_habana_profile
from lightning_hpu.profiler.report import OperatorCost

__all__ = ["HABANA_PROFILE_ENV", "OperatorCost", "check_habana_profile"]
