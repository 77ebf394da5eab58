"""Fabric on several HPUs and nodes: DDP over HCCL, and fast DDP; the Trainer's twin is
:mod:`lightning_hpu.pytorch.strategies.parallel`."""

from __future__ import annotations

from collections.abc import Generator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import timedelta
from typing import Any, Literal

import torch
from lightning.fabric.accelerators import Accelerator
from lightning.fabric.plugins import CheckpointIO, ClusterEnvironment, Precision
from lightning.fabric.plugins.collectives.torch_collective import default_pg_timeout
from lightning.fabric.strategies.strategy import _BackwardSyncControl
from lightning.fabric.utilities.types import Optimizable
from torch import Tensor
from torch.nn import Module
from torch.optim import Optimizer
from typing_extensions import override

from lightning_hpu.distributed.collectives import broadcast_module_states_
from lightning_hpu.distributed.fast_ddp import FastDDPHooks, ReduceDtypeName, chosen_ddp_kwargs
from lightning_hpu.fabric.strategies.base import FabricFusedClipHooks, FabricHPUStrategyHooks
from lightning_hpu.fabric.strategies.hccl import FabricHCCLDDPHooks


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


class HPUParallelStrategy(FastDDPHooks, FabricHPUStrategyHooks, FabricFusedClipHooks, FabricHCCLDDPHooks):
    """Fabric strategy for several HPUs and nodes: DDP over HCCL (``strategy="hpu_parallel"`` or ``"hpu_ddp"``).

    Args:
        accelerator, parallel_devices, cluster_environment, checkpoint_io, precision, process_group_backend, timeout:
            as Lightning's ``DDPStrategy`` (in its order, so they are taken by position too); the process group is
            HCCL's unless ``process_group_backend`` names another.
        start_method: ``"popen"`` (the default) or ``"spawn"``; forking start methods are refused.
        fast_ddp: (``strategy="hpu_fast_ddp"``) do not wrap the model in ``DistributedDataParallel``: ``fabric.setup``
            copies rank 0's weights everywhere, and the gradients of all ``fabric.backward`` calls since the last
            step are averaged with one pre-scaled all-reduce per dtype, at the first of ``fabric.clip_gradients``
            or the wrapped ``optimizer.step()``. Nothing is reduced inside ``fabric.no_backward_sync``.
        reduce_dtype: with ``fast_ddp``, the dtype gradients travel in (``torch.bfloat16`` or ``"bfloat16"`` halves
            the bytes sent; the result is cast back), as for the Trainer's strategy. ``None``: the gradients' own dtype.
        bucket_cap_mb, gradient_as_bucket_view, static_graph, find_unused_parameters, broadcast_buffers:
            ``DistributedDataParallel``'s; ``None``: the Gaudi default of the Trainer's
            :class:`lightning_hpu.HPUParallelStrategy` (``bucket_cap_mb=230``, ``gradient_as_bucket_view=True``),
            else DDP's.
        pipeline_forward_backward: also mark a step between forward and backward (at ``fabric.backward``).
        **kwargs: further ``DistributedDataParallel`` keyword arguments (``init_sync``, ``process_group``, ...), as
            given.
    """

    def __init__(
        self,
        accelerator: Accelerator | None = None,
        parallel_devices: list[torch.device] | None = None,
        cluster_environment: ClusterEnvironment | None = None,
        checkpoint_io: CheckpointIO | None = None,
        precision: Precision | None = None,
        process_group_backend: str | None = None,
        timeout: timedelta | None = default_pg_timeout,
        start_method: Literal["popen", "spawn"] = "popen",
        *,
        fast_ddp: bool = False,
        reduce_dtype: torch.dtype | ReduceDtypeName | None = None,
        bucket_cap_mb: int | None = None,
        gradient_as_bucket_view: bool | None = None,
        static_graph: bool | None = None,
        find_unused_parameters: bool | None = None,
        broadcast_buffers: bool | None = None,
        pipeline_forward_backward: bool = False,
        **kwargs: Any,
    ) -> None:
        declared = {
            "bucket_cap_mb": bucket_cap_mb,
            "gradient_as_bucket_view": gradient_as_bucket_view,
            "static_graph": static_graph,
            "find_unused_parameters": find_unused_parameters,
            "broadcast_buffers": broadcast_buffers,
        }
        super().__init__(
            fast_ddp=fast_ddp,
            reduce_dtype=reduce_dtype,
            pipeline_forward_backward=pipeline_forward_backward,
            ddp_kwargs=chosen_ddp_kwargs(type(self).__name__, declared, kwargs),
            accelerator=accelerator,
            parallel_devices=parallel_devices,
            cluster_environment=cluster_environment,
            checkpoint_io=checkpoint_io,
            precision=precision,
            process_group_backend=process_group_backend,
            timeout=timeout,
            start_method=start_method,
        )
        self._fast_sync = _FastDDPBackwardSyncControl()
        if self.fast_ddp:
            self._backward_sync_control = self._fast_sync

    @override
    def setup_module(self, module: Module) -> Module:  # type: ignore[override]  # fast DDP does not wrap in DDP
        if not self.fast_ddp:
            return super().setup_module(module)
        broadcast_module_states_(module, src=0)
        return module

    @override
    def backward(self, tensor: Tensor, module: Module | None, *args: Any, **kwargs: Any) -> None:
        super().backward(tensor, module, *args, **kwargs)
        self._fast_gradients.pending = self.fast_ddp

    def reduce_gradients(self, optimizer: Optimizer) -> None:
        """Fast DDP: average the pending gradients of ``optimizer``'s parameters over all processes, once."""
        if self._fast_gradients.pending and not self._fast_sync.blocked:
            self._fast_gradients.reduce(optimizer)

    @override
    def _complete_gradients(self, optimizer: Optimizer) -> None:
        self.reduce_gradients(optimizer)

    @override
    def optimizer_step(self, optimizer: Optimizable, **kwargs: Any) -> Any:
        if isinstance(optimizer, Optimizer):
            self.reduce_gradients(optimizer)
        return super().optimizer_step(optimizer, **kwargs)


#: lightning-habana's name for the same class (docs/guide/coming-from-lightning-habana.md).
HPUDDPStrategy = HPUParallelStrategy
