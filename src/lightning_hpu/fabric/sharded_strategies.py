"""Former home of Fabric's sharded strategies, now :mod:`lightning_hpu.fabric.strategies.fsdp` and
:mod:`lightning_hpu.fabric.strategies.model_parallel` (kept importable)."""

from lightning_hpu.fabric.strategies.fsdp import HPUFSDPStrategy
from lightning_hpu.fabric.strategies.model_parallel import HPUModelParallelStrategy

__all__ = ["HPUFSDPStrategy", "HPUModelParallelStrategy"]
