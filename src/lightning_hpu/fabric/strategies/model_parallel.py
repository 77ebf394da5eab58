"""Fabric FSDP2 + tensor parallelism over HCCL; the Trainer's twin is :mod:`lightning_hpu.strategies.model_parallel`."""

from __future__ import annotations

import torch
from lightning.fabric.strategies import ModelParallelStrategy
from torch.nn import Module
from torch.optim import Optimizer
from typing_extensions import override

from lightning_hpu.distributed import sharding
from lightning_hpu.fabric.strategies.base import FabricHPUStrategyHooks
from lightning_hpu.fabric.strategies.hccl import FabricHCCLCollectiveOps, HCCLProcessGroup


class HPUModelParallelStrategy(
    FabricHPUStrategyHooks, FabricHCCLCollectiveOps, HCCLProcessGroup, ModelParallelStrategy
):
    """Fabric FSDP2 + tensor parallelism over HCCL (``strategy="hpu_model_parallel"``).

    Args:
        parallelize_fn: ``(module, device_mesh) -> module`` applying ``fully_shard``/``parallelize_module`` over the
            mesh's ``"data_parallel"`` and ``"tensor_parallel"`` dimensions, as for Lightning's strategy. Every
            ``fully_shard`` module it makes is then set to reduce gradients with ``SUM``.
        data_parallel_size, tensor_parallel_size, save_distributed_checkpoint, process_group_backend, timeout: as
            Lightning's ``ModelParallelStrategy``.
    """

    strategy_name = "hpu_model_parallel"  # not registered by name: Fabric needs the ``parallelize_fn`` object

    @override
    def _configure_launcher(self) -> None:
        sharding.check_before_launch(
            self.strategy_name, self.num_nodes, self.num_processes, tensor_parallel_size=self._tensor_parallel_size
        )
        super()._configure_launcher()

    @override
    def setup_module(self, module: Module) -> Module:
        module = super().setup_module(module)
        sharding.force_sum_reduction(module)
        return module

    @override
    def clip_gradients_norm(
        self,
        module: Module,
        optimizer: Optimizer,
        max_norm: float | int,
        norm_type: float | int = 2.0,
        error_if_nonfinite: bool = True,
    ) -> torch.Tensor:
        """Clip by the global 2-norm over every mesh (DTensor and plain gradients together)."""
        if norm_type != 2.0:
            raise ValueError(f"norm_type={norm_type!r}: HPUModelParallelStrategy clips by the 2-norm only.")
        self.precision.unscale_gradients(optimizer)
        return sharding.clip_grad_norm_across_meshes(list(self.precision.main_params(optimizer)), float(max_norm))
