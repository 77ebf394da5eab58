"""lightning-hpu: PyTorch Lightning on Intel Gaudi accelerators (HPUs).

Installed, the package registers ``accelerator="hpu"``, the HPU strategies, precision and profiler names with
Lightning's Trainer and Fabric as soon as Lightning is imported (:mod:`lightning_hpu_autoload`; off with
``LIGHTNING_HPU_AUTOLOAD=0``), and importing it does the same; it opens no device and starts no process. The classes
for the standalone ``pytorch_lightning`` and ``lightning_fabric`` are in :mod:`lightning_hpu.standalone`. Without a
Gaudi, set ``LIGHTNING_HPU_BACKEND=cpu`` to run everything on the CPU stand-in. Where HPUs are expected and the torch,
Lightning or Python version is outside the tested ones (docs/guide/supported-versions.md), it warns once.
"""

import contextlib
from typing import Any

from lightning_hpu.data import BucketPadCollate, LengthGroupedBatchSampler
from lightning_hpu.device.autocast_ops import set_autocast_op_lists
from lightning_hpu.device.fused_optimizers import clip_grad_norm, fused_adamw, fused_sgd
from lightning_hpu.distributed.context_parallel import gradient_mesh
from lightning_hpu.distributed.ulysses import ContextParallelAttention
from lightning_hpu.fabric.plugins.precision import HPUPrecision
from lightning_hpu.fp8 import fp8_finish_measurement, fp8_measure, fp8_quantize
from lightning_hpu.hpu_graphs import (
    GraphedCallablesOptions,
    HPUGraph,
    InferenceGraphOptions,
    ModuleCacher,
    ModuleCacherOptions,
    make_graphed_callables,
    wrap_in_hpu_graph,
)
from lightning_hpu.integration.registration import register_all
from lightning_hpu.optimum import FiniteMean, GaudiConfig
from lightning_hpu.pytorch.accelerator import HPUAccelerator
from lightning_hpu.pytorch.callbacks import (
    HPUCompile,
    HPUFp8Inference,
    HPUGraphs,
    HPULossLogger,
    HPURecompileMonitor,
    HPUThroughputMonitor,
)
from lightning_hpu.pytorch.plugins import (
    HPUAsyncCheckpointIO,
    HPUCheckpointIO,
    HPUDeepSpeedPrecisionPlugin,
    HPUFSDPPrecisionPlugin,
    HPUModelParallelPrecisionPlugin,
    HPUPrecisionPlugin,
)
from lightning_hpu.pytorch.profilers import HPUProfiler
from lightning_hpu.pytorch.strategies import (
    HPUDeepSpeedStrategy,
    HPUFSDPStrategy,
    HPUModelParallelStrategy,
    HPUParallelStrategy,
    SingleHPUStrategy,
    mark_step,
)
from lightning_hpu.runtime import (
    HPUConfigurationError,
    HPUFeatureUnavailableError,
    HPUNotAvailableError,
    get_backend,
    hpu_expected,
)
from lightning_hpu.runtime.recipe_cache import RecipeCache, apply_recipe_cache_from_env
from lightning_hpu.support.old_paths import install as install_old_paths
from lightning_hpu.support.user_errors import run_script
from lightning_hpu.support.versions import PACKAGE_VERSION, UntestedVersionWarning, warn_if_untested

__version__ = PACKAGE_VERSION

#: lightning-habana's names for the same classes (docs/guide/coming-from-lightning-habana.md).
HPUDDPStrategy = HPUParallelStrategy
HPUFSDPPrecision = HPUFSDPPrecisionPlugin

#: Ray Train's HPU strategies (:mod:`lightning_hpu.pytorch.ray`), imported on first use: ``import lightning_hpu``
#: does not import Ray, which is an optional dependency (``pip install 'lightning-hpu[ray]'``).
_RAY_NAMES = ("HPURayDDPStrategy", "HPURayDeepSpeedStrategy", "HPURayFSDPStrategy")


def __getattr__(name: str) -> Any:
    if name == "HPU_AVAILABLE":  # lightning-habana's flag, asked when read (lightning-habana ran hl-smi at import)
        return HPUAccelerator.is_available()
    if name in _RAY_NAMES:
        from lightning_hpu.pytorch import ray as ray_strategies

        return getattr(ray_strategies, name)
    raise AttributeError(f"module 'lightning_hpu' has no attribute {name!r}")


__all__ = [
    "BucketPadCollate",
    "ContextParallelAttention",
    "FiniteMean",
    "GaudiConfig",
    "GraphedCallablesOptions",
    "HPUAccelerator",
    "HPUAsyncCheckpointIO",
    "HPUCheckpointIO",
    "HPUCompile",
    "HPUConfigurationError",
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
    "HPULossLogger",
    "HPUModelParallelPrecisionPlugin",
    "HPUModelParallelStrategy",
    "HPUNotAvailableError",
    "HPUParallelStrategy",
    "HPUPrecision",
    "HPUPrecisionPlugin",
    "HPUProfiler",
    "HPURecompileMonitor",
    "HPUThroughputMonitor",
    "InferenceGraphOptions",
    "LengthGroupedBatchSampler",
    "ModuleCacher",
    "ModuleCacherOptions",
    "RecipeCache",
    "SingleHPUStrategy",
    "UntestedVersionWarning",
    "__version__",
    "clip_grad_norm",
    "fp8_finish_measurement",
    "fp8_measure",
    "fp8_quantize",
    "fused_adamw",
    "fused_sgd",
    "get_backend",
    "gradient_mesh",
    "make_graphed_callables",
    "mark_step",
    "run_script",
    "set_autocast_op_lists",
    "wrap_in_hpu_graph",
]

if hpu_expected():  # where lightning-hpu is merely installed (a CPU or CUDA machine), it stays silent
    warn_if_untested()
install_old_paths()
with contextlib.suppress(HPUConfigurationError):  # a bad LIGHTNING_HPU_RECIPE_CACHE is refused where HPUs are asked for
    apply_recipe_cache_from_env()
register_all()
