"""The Trainer's HPU profiler (``Trainer(profiler="hpu")``)."""

from lightning_hpu.pytorch.profilers.hpu import HPUProfiler

__all__ = ["HPUProfiler"]
