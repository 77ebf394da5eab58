"""Model parallelism on HPUs for the Trainer: Lightning's ``ModelParallelStrategy`` (FSDP2 + DTensor TP) over HCCL."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any, Literal

import lightning.pytorch as pl
from lightning.fabric.plugins.collectives.torch_collective import default_pg_timeout
from lightning.fabric.strategies.registry import _StrategyRegistry
from lightning.pytorch.strategies import ModelParallelStrategy
from lightning.pytorch.utilities.model_helpers import is_overridden
from torch import Tensor
from typing_extensions import override

from lightning_hpu.distributed import sharding
from lightning_hpu.distributed.context_parallel import (
    ContextParallelHooks,
    connect_attention,
    needs_no_parallelization,
)
from lightning_hpu.distributed.hccl import HCCLProcessGroupHooks
from lightning_hpu.pytorch.plugins.model_parallel_precision import HPUModelParallelPrecisionPlugin
from lightning_hpu.pytorch.strategies.base import HPUStrategyHooks
from lightning_hpu.pytorch.strategies.hccl import HCCLParallelHooks


class HPUModelParallelStrategy(
    HPUStrategyHooks, HCCLParallelHooks, HCCLProcessGroupHooks, ContextParallelHooks, ModelParallelStrategy
):
    """FSDP2 and tensor parallelism over HCCL (``strategy="hpu_model_parallel"``; ``"model_parallel"`` maps here).

    The LightningModule's ``configure_model`` applies ``fully_shard`` and ``parallelize_module`` over
    ``self.device_mesh`` (dimensions ``"data_parallel"`` and ``"tensor_parallel"``), as with Lightning's strategy
    (which refuses a LightningModule without the hook; with ``context_parallel_size > 1`` and no tensor parallelism the
    parameters stay replicated, and a LightningModule without ``configure_model`` is accepted);
    ``data_parallel_size`` defaults to the number of nodes and ``tensor_parallel_size`` to the HPUs per node. On HPU
    the strategy also makes every ``fully_shard`` module reduce gradients with ``SUM`` (FSDP2 sends ``AVG``
    otherwise, which HCCL refuses), runs eagerly only, and saves sharded (``save_distributed_checkpoint=True``) or
    full checkpoints through ``torch.distributed.checkpoint``.

    ``context_parallel_size=P`` splits every sequence over P ranks of a ``"context_parallel"`` mesh dimension
    (docs/guide/context-parallelism.md): each batch is cut along dimension 1 before ``training_step``, the model's
    :class:`~lightning_hpu.ContextParallelAttention` exchanges heads for sequence over HCCL, and gradients are averaged
    over the data x context parallel ranks (``fully_shard`` over ``gradient_mesh(self.device_mesh)`` does that too).

    Args:
        data_parallel_size, tensor_parallel_size, save_distributed_checkpoint, process_group_backend, timeout: as
            Lightning's ``ModelParallelStrategy`` (in its order, so they are taken by position too).
        context_parallel_size: ranks every sequence is split over (docs/guide/context-parallelism.md); 1: none.
    """

    strategy_name = "hpu_model_parallel"

    def __init__(
        self,
        data_parallel_size: Literal["auto"] | int = "auto",
        tensor_parallel_size: Literal["auto"] | int = "auto",
        save_distributed_checkpoint: bool = True,
        process_group_backend: str | None = None,
        timeout: timedelta | None = default_pg_timeout,
        *,
        context_parallel_size: int = 1,
    ) -> None:
        super().__init__(
            context_parallel_size=context_parallel_size,
            data_parallel_size=data_parallel_size,
            tensor_parallel_size=tensor_parallel_size,
            save_distributed_checkpoint=save_distributed_checkpoint,
            process_group_backend=process_group_backend,
            timeout=timeout,
        )

    @staticmethod
    def hpu_precision(precision: str) -> HPUModelParallelPrecisionPlugin:
        """The precision plugin the connector gives this strategy for ``Trainer(precision=...)`` on HPU."""
        return HPUModelParallelPrecisionPlugin(precision)

    @override
    def setup_environment(self) -> None:
        with self._lightning_mesh_sizes():
            super().setup_environment()
        assert self.lightning_module is not None
        self.lightning_module._device_mesh = self._device_mesh

    @override
    def setup(self, trainer: pl.Trainer) -> None:
        assert self.model is not None
        sharding.force_sum_reduction(self.model)
        connect_attention(self.model, self.device_mesh)  # configure_model has run: the model is parallelized
        with self._replicated_model_needs_no_hook():
            super().setup(trainer)

    @contextmanager
    def _replicated_model_needs_no_hook(self) -> Iterator[None]:
        """Around Lightning's ``setup``, which refuses a LightningModule without ``configure_model``: a replicated
        context-parallel model needs none, so for that case only the module gets an empty hook of its own while
        Lightning checks (the Trainer called the hooks before; the instance attribute is removed afterwards)."""
        module = self.lightning_module
        if (
            module is None
            or is_overridden("configure_model", module)
            or not needs_no_parallelization(self._context_parallel_size, self._tensor_parallel_size)
        ):
            yield
            return
        vars(module)["configure_model"] = _nothing_to_parallelize
        try:
            yield
        finally:
            del vars(module)["configure_model"]

    @override
    def batch_to_device(self, batch: Any, device: Any = None, dataloader_idx: int = 0) -> Any:
        return self.shard_sequence(super().batch_to_device(batch, device, dataloader_idx))

    @override
    def post_backward(self, closure_loss: Tensor) -> None:
        super().post_backward(closure_loss)
        self._reduce_context_parallel_gradients(self.model)

    @classmethod
    @override
    def register_strategies(cls, strategy_registry: _StrategyRegistry) -> None:
        description = f"{cls.__name__}: FSDP2 and tensor parallelism over HCCL"
        # Lightning registers no name for its ModelParallelStrategy: ``"model_parallel"`` means this strategy where an
        # HPU is asked for (lightning_hpu.integration.strategy_names.HPU_ONLY_NAMES), unregistered, so a CPU program
        # keeps Lightning's "invalid strategy name" for it.
        strategy_registry.register(cls.strategy_name, cls, description=description)


def _nothing_to_parallelize() -> None:
    """The ``configure_model`` of a LightningModule whose parameters context parallelism keeps replicated."""
