"""HPU strategies for Lightning Fabric."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import torch
from lightning.fabric.accelerators import Accelerator
from lightning.fabric.plugins import CheckpointIO, ClusterEnvironment, Precision
from lightning.fabric.plugins.collectives.torch_collective import default_pg_timeout
from lightning.fabric.strategies import SingleDeviceStrategy
from lightning.fabric.strategies.registry import _StrategyRegistry
from lightning.fabric.utilities.types import _DEVICE
from typing_extensions import override

from lightning_hpu.runtime import require_backend
from lightning_hpu.strategies.hccl import FabricHCCLCollectivesHooks
from lightning_hpu.strategies.lazy_mode import FabricHPUStrategyHooks
from lightning_hpu.strategies.start_methods import check_start_method


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
            device=torch.device(device) if device is not None else require_backend().torch_device(),
            accelerator=accelerator,
            checkpoint_io=checkpoint_io,
            precision=precision,
        )

    @classmethod
    @override
    def register_strategies(cls, strategy_registry: _StrategyRegistry) -> None:
        strategy_registry.register(cls.strategy_name, cls, description=f"{cls.__name__}: one HPU")


class HPUParallelStrategy(FabricHPUStrategyHooks, FabricHCCLCollectivesHooks):
    """Fabric strategy for several HPUs and nodes: DDP over HCCL (``strategy="hpu_parallel"`` or ``"hpu_ddp"``).

    ``**kwargs`` go to ``DistributedDataParallel`` (``bucket_cap_mb``, ``gradient_as_bucket_view``,
    ``static_graph``, ``find_unused_parameters``); ``start_method`` is ``"popen"`` or ``"spawn"``; see the Trainer's
    :class:`lightning_hpu.HPUParallelStrategy`.
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
        start_method: str = "popen",
        **kwargs: Any,
    ) -> None:
        check_start_method(start_method, type(self).__name__)
        super().__init__(
            accelerator=accelerator,
            parallel_devices=parallel_devices,
            cluster_environment=cluster_environment,
            checkpoint_io=checkpoint_io,
            precision=precision,
            process_group_backend=process_group_backend,
            timeout=timeout,
            start_method=start_method,  # type: ignore[arg-type]  # checked above
            **kwargs,
        )

    @classmethod
    @override
    def register_strategies(cls, strategy_registry: _StrategyRegistry) -> None:
        description = f"{cls.__name__}: DDP over HCCL on several HPUs and nodes"
        strategy_registry.register(cls.strategy_name, cls, description=description)
        strategy_registry.register("hpu_ddp", cls, description=description)
