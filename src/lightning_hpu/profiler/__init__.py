"""Profiling HPU runs: :class:`HPUProfiler` and the pieces of its report."""

from lightning_hpu.profiler.environment import HABANA_PROFILE_ENV, check_habana_profile
from lightning_hpu.profiler.hpu import HPUProfiler
from lightning_hpu.profiler.report import OperatorCost

__all__ = ["HABANA_PROFILE_ENV", "HPUProfiler", "OperatorCost", "check_habana_profile"]
