"""Sharded HPU strategies for Lightning Fabric: FSDP and model parallelism (FSDP2 + tensor parallel) over HCCL.

They follow the Trainer's :class:`~lightning_hpu.HPUFSDPStrategy` and :class:`~lightning_hpu.HPUModelParallelStrategy`
and share their code (:mod:`lightning_hpu.strategies.sharding`): HCCL process group, eager mode only, FSDP on this
process's HPU, FSDP2 reducing with ``SUM``, HCCL-safe ``all_reduce``/``all_gather``/``broadcast``.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
from lightning.fabric.plugins import Precision
from lightning.fabric.strategies import FSDPStrategy, ModelParallelStrategy, ParallelStrategy
from lightning.fabric.strategies.fsdp import _is_sharded_checkpoint
from lightning.fabric.strategies.registry import _StrategyRegistry
from lightning.fabric.utilities.seed import reset_seed
from lightning.fabric.utilities.types import _PATH
from torch.nn import Module
from torch.optim import Optimizer
from typing_extensions import override

from lightning_hpu.fabric.fsdp_precision import HPUFSDPPrecision
from lightning_hpu.strategies import fsdp_state, sharding
from lightning_hpu.strategies.hccl import FabricHCCLCollectiveOps, init_hccl_process_group
from lightning_hpu.strategies.lazy_mode import FabricHPUStrategyHooks


class _HCCLProcessGroup(ParallelStrategy):
    """Fabric mixin: the default process group over HCCL, for strategies that keep Lightning's ``_setup_distributed``
    name (FSDP and model parallel)."""

    _process_group_backend: str | None
    _timeout: timedelta | None

    def _setup_distributed(self) -> None:
        reset_seed()
        self._set_world_ranks()  # type: ignore[attr-defined]
        self._process_group_backend = init_hccl_process_group(
            self.cluster_environment,
            self.world_size,
            self.global_rank,
            self.local_rank,
            self._process_group_backend,
            self._timeout,
        )


class HPUFSDPStrategy(FabricHPUStrategyHooks, FabricHCCLCollectiveOps, _HCCLProcessGroup, FSDPStrategy):
    """Fabric FSDP over HCCL (``strategy="hpu_fsdp"``; ``"fsdp"`` maps here on HPU). Arguments as Lightning's."""

    strategy_name = "hpu_fsdp"

    @staticmethod
    def hpu_precision(precision: str) -> HPUFSDPPrecision:
        """The precision plugin the connector gives this strategy for ``Fabric(precision=...)`` on HPU."""
        return HPUFSDPPrecision(precision)

    @property
    @override
    def precision(self) -> HPUFSDPPrecision:
        plugin = self._precision
        if plugin is None:
            plugin = self._precision = HPUFSDPPrecision("32-true")
        if not isinstance(plugin, HPUFSDPPrecision):
            raise TypeError(f"HPUFSDPStrategy needs an HPUFSDPPrecision, got {type(plugin).__name__}.")
        return plugin

    @precision.setter
    def precision(self, precision: Precision | None) -> None:
        if precision is not None and not isinstance(precision, HPUFSDPPrecision):
            raise TypeError(
                f"HPUFSDPStrategy needs an HPUFSDPPrecision, got {type(precision).__name__}; pass"
                " Fabric(precision=...) or plugins=[HPUFSDPPrecision(...)]."
            )
        self._precision = precision

    @override
    def _configure_launcher(self) -> None:
        sharding.check_before_launch(
            self.strategy_name, self.num_nodes, self.num_processes, sharding_strategy=self.sharding_strategy
        )
        super()._configure_launcher()

    @override
    def setup_environment(self) -> None:
        ParallelStrategy.setup_environment(self)  # the accelerator; FSDPStrategy's process group assumes CUDA
        self._setup_distributed()
        sharding.set_fsdp_device_mesh(self._fsdp_kwargs, self.sharding_strategy, self.num_nodes, self.num_processes)

    def _wrap_kwargs(self) -> dict[str, Any]:
        return {
            "cpu_offload": self.cpu_offload,
            "mixed_precision": self.mixed_precision_config,
            "sharding_strategy": self.sharding_strategy,
            **self._fsdp_kwargs,
        }

    @override
    def setup_module(self, module: Module) -> Module:
        return sharding.wrap_fsdp(
            module, activation_checkpointing_kwargs=self._activation_checkpointing_kwargs, **self._wrap_kwargs()
        )

    @override
    def module_sharded_context(self) -> AbstractContextManager:
        return sharding.fsdp_wrap_context(**self._wrap_kwargs())

    @override
    def save_checkpoint(
        self,
        path: _PATH,
        state: dict[str, Module | Optimizer | Any],
        storage_options: Any | None = None,
        filter: dict[str, Callable[[str, Any], bool]] | None = None,
    ) -> None:
        """Save like Lightning's Fabric FSDP (a file for ``state_dict_type="full"``, else a folder of shards)."""
        if storage_options is not None or filter is not None:
            raise TypeError("HPUFSDPStrategy.save_checkpoint takes neither `storage_options` nor `filter`.")
        target = Path(self.broadcast(path))
        fsdp_state.save_fabric_state(target, state, full=self._state_dict_type == "full", rank=self.global_rank)
        self.barrier()

    @override
    def load_checkpoint(
        self,
        path: _PATH,
        state: Module | Optimizer | dict[str, Module | Optimizer | Any] | None = None,
        strict: bool = True,
        weights_only: bool | None = None,
    ) -> dict[str, Any]:
        """Load a folder of shards through ``torch.distributed.checkpoint``; full files as Lightning does."""
        source = Path(self.broadcast(path))
        if isinstance(state, dict) and _is_sharded_checkpoint(source):
            return fsdp_state.load_fabric_sharded_state(source, state, strict=strict)
        return super().load_checkpoint(source, state, strict=strict, weights_only=weights_only)

    @classmethod
    @override
    def register_strategies(cls, strategy_registry: _StrategyRegistry) -> None:
        description = f"{cls.__name__}: fully sharded data parallel over HCCL"
        strategy_registry.register(cls.strategy_name, cls, description=description)
        strategy_registry.register(
            "hpu_fsdp_cpu_offload",
            cls,
            description=f"{description}, parameters offloaded to the host",
            cpu_offload=True,
        )


class HPUModelParallelStrategy(
    FabricHPUStrategyHooks, FabricHCCLCollectiveOps, _HCCLProcessGroup, ModelParallelStrategy
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
