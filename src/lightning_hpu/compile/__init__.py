"""Eager mode and ``torch.compile`` on HPU: the ``HPUCompile`` switch, recompilation counting, honest throughput."""

from lightning_hpu.compile.callback import HPUCompile, HPUCompileError
from lightning_hpu.compile.monitor import HPURecompileMonitor
from lightning_hpu.compile.throughput import HPUThroughputMonitor
from lightning_hpu.runtime.compile_backend import CompileInLazyModeError

__all__ = ["CompileInLazyModeError", "HPUCompile", "HPUCompileError", "HPURecompileMonitor", "HPUThroughputMonitor"]
