"""lightning-hpu: PyTorch Lightning on Intel Gaudi accelerators (HPUs).

Importing the package registers ``accelerator="hpu"`` and the HPU strategies with Lightning's Trainer and Fabric;
it opens no device and starts no process. Without a Gaudi, set ``LIGHTNING_HPU_BACKEND=cpu`` to run everything on
the CPU stand-in.
"""

from lightning_hpu.accelerator import HPUAccelerator
from lightning_hpu.autocast_ops import set_autocast_op_lists
from lightning_hpu.compile import HPUCompile, HPURecompileMonitor, HPUThroughputMonitor
from lightning_hpu.fabric.precision import HPUPrecision
from lightning_hpu.fp8 import HPUFp8Inference, fp8_finish_measurement, fp8_measure, fp8_quantize
from lightning_hpu.hpu_graphs import HPUGraph, HPUGraphs, ModuleCacher, make_graphed_callables, wrap_in_hpu_graph
from lightning_hpu.optimizers import clip_grad_norm, fused_adamw, fused_sgd
from lightning_hpu.plugins import (
    HPUCheckpointIO,
    HPUDeepSpeedPrecisionPlugin,
    HPUFSDPPrecisionPlugin,
    HPUModelParallelPrecisionPlugin,
    HPUPrecisionPlugin,
)
from lightning_hpu.profiler import HPUProfiler
from lightning_hpu.registration import register_all
from lightning_hpu.runtime import HPUFeatureUnavailableError, HPUNotAvailableError, get_backend
from lightning_hpu.strategies import (
    HPUDeepSpeedStrategy,
    HPUFSDPStrategy,
    HPUModelParallelStrategy,
    HPUParallelStrategy,
    SingleHPUStrategy,
    mark_step,
)

__version__ = "0.1.0"

#: lightning-habana's names for the same classes (README, "Coming from lightning-habana").
HPUDDPStrategy = HPUParallelStrategy
HPUFSDPPrecision = HPUFSDPPrecisionPlugin

__all__ = [
    "HPUAccelerator",
    "HPUCheckpointIO",
    "HPUCompile",
    "HPUDDPStrategy",
    "HPUDeepSpeedPrecisionPlugin",
    "HPUDeepSpeedStrategy",
    "HPUFSDPPrecision",
    "HPUFSDPPrecisionPlugin",
    "HPUFSDPStrategy",
    "HPUFeatureUnavailableError",
    "HPUFp8Inference",
    "HPUGraph",
    "HPUGraphs",
    "HPUModelParallelPrecisionPlugin",
    "HPUModelParallelStrategy",
    "HPUNotAvailableError",
    "HPUParallelStrategy",
    "HPUPrecision",
    "HPUPrecisionPlugin",
    "HPUProfiler",
    "HPURecompileMonitor",
    "HPUThroughputMonitor",
    "ModuleCacher",
    "SingleHPUStrategy",
    "__version__",
    "clip_grad_norm",
    "fp8_finish_measurement",
    "fp8_measure",
    "fp8_quantize",
    "fused_adamw",
    "fused_sgd",
    "get_backend",
    "make_graphed_callables",
    "mark_step",
    "set_autocast_op_lists",
    "wrap_in_hpu_graph",
]

register_all()
