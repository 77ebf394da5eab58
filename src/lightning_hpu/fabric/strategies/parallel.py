"""Fabric on several HPUs and nodes: DDP over HCCL, and fast DDP; the Trainer's twin is
:mod:`lightning_hpu.pytorch.strategies.parallel`."""

from __future__ import annotations

from collections.abc import Generator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from lightning.fabric.strategies.strategy import _BackwardSyncControl
from lightning.fabric.utilities.types import Optimizable
from torch import Tensor
from torch.nn import Module
from torch.optim import Optimizer
from typing_extensions import override

from lightning_hpu.distributed.collectives import broadcast_module_states_
from lightning_hpu.distributed.fast_ddp import FastDDPHooks
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

    Lightning's ``DDPStrategy`` arguments (``accelerator``, ``parallel_devices``, ``cluster_environment``,
    ``checkpoint_io``, ``precision``, ``process_group_backend``, ``timeout``) are taken as Lightning takes them; other
    keywords go to ``DistributedDataParallel`` (``bucket_cap_mb``, ``gradient_as_bucket_view``,
    ``static_graph``, ``find_unused_parameters``), with the same Gaudi defaults as the Trainer's
    :class:`lightning_hpu.HPUParallelStrategy` (``bucket_cap_mb=230``, ``gradient_as_bucket_view=True``);
    ``start_method`` is ``"popen"`` or ``"spawn"``.

    Args:
        fast_ddp: (``strategy="hpu_fast_ddp"``) do not wrap the model in ``DistributedDataParallel``: ``fabric.setup``
            copies rank 0's weights everywhere, and the gradients of all ``fabric.backward`` calls since the last
            step are averaged with one pre-scaled all-reduce per dtype, at the first of ``fabric.clip_gradients``
            or the wrapped ``optimizer.step()``. Nothing is reduced inside ``fabric.no_backward_sync``.
        reduce_dtype: with ``fast_ddp``, the dtype gradients travel in (``torch.bfloat16`` halves the bytes sent;
            the result is cast back), as for the Trainer's strategy. ``None``: the gradients' own dtype.
        pipeline_forward_backward: also mark a step between forward and backward (at ``fabric.backward``).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
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
