"""HPU strategies for Lightning Fabric (the sharded ones live in :mod:`lightning_hpu.fabric.sharded_strategies`)."""

from __future__ import annotations

from collections.abc import Generator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import timedelta
from typing import Any

import torch
from lightning.fabric.accelerators import Accelerator
from lightning.fabric.plugins import CheckpointIO, ClusterEnvironment, Precision
from lightning.fabric.plugins.collectives.torch_collective import default_pg_timeout
from lightning.fabric.strategies import SingleDeviceStrategy
from lightning.fabric.strategies.registry import _StrategyRegistry
from lightning.fabric.strategies.strategy import _BackwardSyncControl
from lightning.fabric.utilities.types import _DEVICE, Optimizable
from torch import Tensor
from torch.nn import Module
from torch.optim import Optimizer
from typing_extensions import override

from lightning_hpu.fabric.sharded_strategies import HPUFSDPStrategy, HPUModelParallelStrategy
from lightning_hpu.runtime import require_backend
from lightning_hpu.strategies.collectives import broadcast_module_states_
from lightning_hpu.strategies.flat_gradients import OptimizerGradients, all_reduce_gradients_
from lightning_hpu.strategies.hccl import FabricHCCLCollectivesHooks, with_gaudi_ddp_defaults
from lightning_hpu.strategies.lazy_mode import FabricHPUStrategyHooks
from lightning_hpu.strategies.start_methods import check_start_method

__all__ = ["HPUDDPStrategy", "HPUFSDPStrategy", "HPUModelParallelStrategy", "HPUParallelStrategy", "SingleHPUStrategy"]


class SingleHPUStrategy(FabricHPUStrategyHooks, SingleDeviceStrategy):
    """Fabric strategy for one HPU (``strategy="hpu_single"``)."""

    strategy_name = "hpu_single"

    def __init__(
        self,
        device: _DEVICE | None = None,
        accelerator: Accelerator | None = None,
        checkpoint_io: CheckpointIO | None = None,
        precision: Precision | None = None,
    ) -> None:
        super().__init__(
            device=torch.device(device) if device is not None else torch.device(require_backend().torch_device().type),
            accelerator=accelerator,
            checkpoint_io=checkpoint_io,
            precision=precision,
        )

    @classmethod
    @override
    def register_strategies(cls, strategy_registry: _StrategyRegistry) -> None:
        strategy_registry.register(cls.strategy_name, cls, description=f"{cls.__name__}: one HPU")
        # lightning-habana's Fabric name for it.
        strategy_registry.register("single_hpu", cls, description=f"{cls.__name__}: one HPU (lightning-habana's name)")


class _FastDDPBackwardSyncControl(_BackwardSyncControl):
    """``fabric.no_backward_sync`` under fast DDP: gradients stay local, and no reduce runs inside the block."""

    def __init__(self) -> None:
        self.blocked = False

    @override
    def no_backward_sync(self, module: Module, enabled: bool) -> AbstractContextManager:
        return self._blocked() if enabled else nullcontext()

    @contextmanager
    def _blocked(self) -> Generator[None, None, None]:
        self.blocked = True
        try:
            yield
        finally:
            self.blocked = False


class HPUParallelStrategy(FabricHPUStrategyHooks, FabricHCCLCollectivesHooks):
    """Fabric strategy for several HPUs and nodes: DDP over HCCL (``strategy="hpu_parallel"`` or ``"hpu_ddp"``).

    ``**kwargs`` go to ``DistributedDataParallel`` (``bucket_cap_mb``, ``gradient_as_bucket_view``,
    ``static_graph``, ``find_unused_parameters``), with the same Gaudi defaults as the Trainer's
    :class:`lightning_hpu.HPUParallelStrategy` (``bucket_cap_mb=230``, ``gradient_as_bucket_view=True``);
    ``start_method`` is ``"popen"`` or ``"spawn"``.

    Args:
        fast_ddp: (``strategy="hpu_fast_ddp"``) do not wrap the model in ``DistributedDataParallel``: ``fabric.setup``
            copies rank 0's weights everywhere, and the gradients of all ``fabric.backward`` calls since the last
            step are averaged with one pre-scaled all-reduce per dtype, at the first of ``fabric.clip_gradients``
            or the wrapped ``optimizer.step()``. Nothing is reduced inside ``fabric.no_backward_sync``.
    """

    strategy_name = "hpu_parallel"

    def __init__(
        self,
        accelerator: Accelerator | None = None,
        parallel_devices: list[torch.device] | None = None,
        cluster_environment: ClusterEnvironment | None = None,
        checkpoint_io: CheckpointIO | None = None,
        precision: Precision | None = None,
        process_group_backend: str | None = None,
        timeout: timedelta | None = default_pg_timeout,
        fast_ddp: bool = False,
        start_method: str = "popen",
        **kwargs: Any,
    ) -> None:
        check_start_method(start_method, type(self).__name__)
        if fast_ddp and kwargs:
            raise ValueError(
                f"HPUParallelStrategy(fast_ddp=True) does not use DistributedDataParallel, so {', '.join(kwargs)}"
                " would have no effect; remove them or set fast_ddp=False."
            )
        super().__init__(
            accelerator=accelerator,
            parallel_devices=parallel_devices,
            cluster_environment=cluster_environment,
            checkpoint_io=checkpoint_io,
            precision=precision,
            process_group_backend=process_group_backend,
            timeout=timeout,
            start_method=start_method,  # type: ignore[arg-type]  # checked above
            **with_gaudi_ddp_defaults(kwargs),
        )
        self.fast_ddp = fast_ddp
        self._fast_sync = _FastDDPBackwardSyncControl()
        if fast_ddp:
            self._backward_sync_control = self._fast_sync
        #: Whether a backward ran since the gradients were last reduced (fast DDP).
        self._gradients_pending = False
        self._flat_gradients = OptimizerGradients()

    @override
    def setup_module(self, module: Module) -> Module:  # type: ignore[override]  # fast DDP does not wrap in DDP
        if not self.fast_ddp:
            return super().setup_module(module)
        broadcast_module_states_(module, src=0)
        return module

    @override
    def teardown(self) -> None:
        self._flat_gradients.clear()
        super().teardown()

    @override
    def backward(self, tensor: Tensor, module: Module | None, *args: Any, **kwargs: Any) -> None:
        super().backward(tensor, module, *args, **kwargs)
        self._gradients_pending = self.fast_ddp

    def reduce_gradients(self, optimizer: Optimizer) -> None:
        """Fast DDP: average the pending gradients of ``optimizer``'s parameters over all processes, once."""
        if not self._gradients_pending or self._fast_sync.blocked:
            return
        all_reduce_gradients_(self._flat_gradients.of(optimizer))
        self._gradients_pending = False

    @override
    def clip_gradients_norm(
        self,
        module: Module,
        optimizer: Optimizer,
        max_norm: float | int,
        norm_type: float | int = 2.0,
        error_if_nonfinite: bool = True,
    ) -> Tensor:
        self.reduce_gradients(optimizer)
        return super().clip_gradients_norm(module, optimizer, max_norm, norm_type, error_if_nonfinite)

    @override
    def clip_gradients_value(self, module: Module, optimizer: Optimizer, clip_val: float | int) -> None:
        self.reduce_gradients(optimizer)
        super().clip_gradients_value(module, optimizer, clip_val)

    @override
    def optimizer_step(self, optimizer: Optimizable, **kwargs: Any) -> Any:
        if isinstance(optimizer, Optimizer):
            self.reduce_gradients(optimizer)
        return super().optimizer_step(optimizer, **kwargs)

    @classmethod
    @override
    def register_strategies(cls, strategy_registry: _StrategyRegistry) -> None:
        description = f"{cls.__name__}: DDP over HCCL on several HPUs and nodes"
        strategy_registry.register(cls.strategy_name, cls, description=description)
        strategy_registry.register("hpu_ddp", cls, description=description)
        strategy_registry.register(
            "hpu_fast_ddp", cls, description=f"{cls.__name__}: one fused gradient all-reduce per step", fast_ddp=True
        )


#: lightning-habana's name for the same class (README, "Coming from lightning-habana").
HPUDDPStrategy = HPUParallelStrategy
