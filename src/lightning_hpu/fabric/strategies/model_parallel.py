"""Fabric FSDP2 + tensor parallelism over HCCL; the Trainer's counterpart is
:mod:`lightning_hpu.pytorch.strategies.model_parallel`, and both share :class:`ContextParallelHooks`."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any, Literal

import torch
from lightning.fabric.plugins.collectives.torch_collective import default_pg_timeout
from lightning.fabric.strategies import ModelParallelStrategy
from torch import Tensor
from torch.nn import Module
from torch.optim import Optimizer
from typing_extensions import override

from lightning_hpu.distributed import sharding
from lightning_hpu.distributed.context_parallel import (
    ContextParallelHooks,
    connect_attention,
    keep_replicated,
    needs_no_parallelization,
)
from lightning_hpu.distributed.hccl import HCCLProcessGroupHooks
from lightning_hpu.fabric.strategies.base import FabricHPUStrategyHooks
from lightning_hpu.fabric.strategies.hccl import FabricHCCLParallelHooks
from lightning_hpu.runtime import HPUConfigurationError


class HPUModelParallelStrategy(
    FabricHPUStrategyHooks,
    FabricHCCLParallelHooks,
    HCCLProcessGroupHooks,
    ContextParallelHooks,
    ModelParallelStrategy,
):
    """Fabric FSDP2 + tensor parallelism over HCCL (``strategy="hpu_model_parallel"``).

    Args:
        parallelize_fn: ``(module, device_mesh) -> module`` applying ``fully_shard``/``parallelize_module`` over the
            mesh's ``"data_parallel"`` and ``"tensor_parallel"`` dimensions, as for Lightning's strategy. Every
            ``fully_shard`` module it makes is then set to reduce gradients with ``SUM``. Optional with
            ``context_parallel_size > 1`` and no tensor parallelism, where the parameters stay replicated.
        data_parallel_size, tensor_parallel_size, save_distributed_checkpoint, process_group_backend, timeout: as
            Lightning's ``ModelParallelStrategy``.
        context_parallel_size: split every sequence over this many ranks of a ``"context_parallel"`` mesh dimension
            (docs/guide/context-parallelism.md): call ``fabric.strategy.shard_sequence(batch)`` on each batch, use
            :class:`~lightning_hpu.ContextParallelAttention` in the model; ``fabric.backward`` then averages the
            gradients over the data x context parallel ranks (unless ``fully_shard`` over ``gradient_mesh`` does).
    """

    strategy_name = "hpu_model_parallel"  # not registered by name: Fabric needs the ``parallelize_fn`` object

    def __init__(
        self,
        parallelize_fn: Callable[[Any, Any], Any] | None = None,
        data_parallel_size: Literal["auto"] | int = "auto",
        tensor_parallel_size: Literal["auto"] | int = "auto",
        save_distributed_checkpoint: bool = True,
        process_group_backend: str | None = None,
        timeout: timedelta | None = default_pg_timeout,
        *,
        context_parallel_size: int = 1,
    ) -> None:
        if parallelize_fn is None:
            if not needs_no_parallelization(context_parallel_size, tensor_parallel_size):
                raise HPUConfigurationError(
                    "`HPUModelParallelStrategy(parallelize_fn=None)` leaves the model replicated, which only context"
                    " parallelism without tensor parallelism can train: pass a parallelize_fn, or set"
                    " context_parallel_size > 1 with tensor_parallel_size 1 (or 'auto')."
                )
            parallelize_fn = keep_replicated
        super().__init__(
            parallelize_fn,
            context_parallel_size=context_parallel_size,
            data_parallel_size=data_parallel_size,
            tensor_parallel_size=tensor_parallel_size,
            save_distributed_checkpoint=save_distributed_checkpoint,
            process_group_backend=process_group_backend,
            timeout=timeout,
        )
        self._set_up_modules: list[Module] = []  # whose gradients ``backward`` averages over context parallel ranks

    @override
    def setup_environment(self) -> None:
        with self._lightning_mesh_sizes():
            super().setup_environment()

    @override
    def setup_module(self, module: Module) -> Module:
        module = super().setup_module(module)
        sharding.force_sum_reduction(module)
        connect_attention(module, self.device_mesh)
        self._set_up_modules.append(module)
        return module

    @override
    def backward(self, tensor: Tensor, module: Module | None, *args: Any, **kwargs: Any) -> None:
        super().backward(tensor, module, *args, **kwargs)
        for set_up in self._set_up_modules:  # Fabric passes ``module`` only for ``fabric.backward(..., model=)``
            self._reduce_context_parallel_gradients(set_up)

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
