"""The Trainer callbacks: ``torch.compile`` on HPU, recompilation and throughput monitors, HPU graphs, fp8 inference,
and the options of optimum-habana's ``gaudi_config.json``."""

from lightning_hpu.pytorch.callbacks.compile import HPUCompile, HPUCompileError
from lightning_hpu.pytorch.callbacks.fp8_inference import HPUFp8Inference
from lightning_hpu.pytorch.callbacks.hpu_graphs import HPUGraphs
from lightning_hpu.pytorch.callbacks.loss_logger import HPULossLogger
from lightning_hpu.pytorch.callbacks.recompile_monitor import HPURecompileMonitor
from lightning_hpu.pytorch.callbacks.throughput import HPUThroughputMonitor

__all__ = [
    "HPUCompile",
    "HPUCompileError",
    "HPUFp8Inference",
    "HPUGraphs",
    "HPULossLogger",
    "HPURecompileMonitor",
    "HPUThroughputMonitor",
]
