"""Eager mode and ``torch.compile`` on HPU, the Lightning-free parts: where graph compilations are counted and the
peak FLOPs of each generation. The Trainer callbacks (``HPUCompile``, ``HPURecompileMonitor``,
``HPUThroughputMonitor``) are in :mod:`lightning_hpu.pytorch.callbacks`."""

from lightning_hpu.runtime.compile_backend import CompileInLazyModeError

__all__ = ["CompileInLazyModeError"]
