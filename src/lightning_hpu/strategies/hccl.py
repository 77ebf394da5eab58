"""HCCL process groups for Lightning's DDP-derived strategies, written once for the Trainer and Fabric.

Mix :class:`HCCLCollectivesHooks` (Trainer) or :class:`FabricHCCLCollectivesHooks` (Fabric) in before a
``DDPStrategy`` subclass (``HPUParallelStrategy``) to get the following; the DeepSpeed strategies, which make their
own process group, and the sharded strategies (FSDP, model parallel), take only the collectives
(:class:`HCCLCollectiveOps`, :class:`FabricHCCLCollectiveOps`):

* ``initialize_distributed_hpu`` with the ranks of Lightning's cluster environment before the process group, and
  the backend's process-group name (``"hccl"``) unless one was passed;
* a process group created without ``device_id`` (the HPU of a process is the unindexed ``hpu`` device, which
  ``init_process_group`` refuses as ``device_id``);
* ``reduce``/``all_reduce``, ``all_gather`` and ``broadcast`` through :mod:`lightning_hpu.strategies.collectives`,
  so no ``AVG`` or ``PRODUCT`` reduce, and no ``int64`` tensor where the device holds it as ``int32``, reaches HCCL;
* (Trainer) SIGTERM agreed on over a host-side group, with no device collective or host sync per training step
  (:class:`~lightning_hpu.strategies.sigterm.SigtermAgreement`, part of :class:`HCCLCollectiveOps`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from lightning.fabric.plugins import ClusterEnvironment
from lightning.fabric.strategies import DDPStrategy as FabricDDPStrategy
from lightning.fabric.strategies import ParallelStrategy as FabricParallelStrategy
from lightning.fabric.utilities.distributed import _init_dist_connection
from lightning.fabric.utilities.seed import reset_seed
from lightning.fabric.utilities.types import ReduceOp
from lightning.pytorch.strategies import DDPStrategy, ParallelStrategy
from lightning.pytorch.strategies.strategy import TBroadcast
from torch import Tensor
from typing_extensions import override

from lightning_hpu.runtime import require_backend
from lightning_hpu.strategies import collectives, elastic
from lightning_hpu.strategies.rank_watchdog import FabricRankWatchdogHooks, RankWatchdogHooks
from lightning_hpu.strategies.sigterm import SigtermAgreement

#: ``DistributedDataParallel`` arguments as optimum-habana sets them on Gaudi (``GaudiTrainingArguments``'s
#: ``ddp_bucket_cap_mb`` default, and ``gradient_as_bucket_view=True`` whenever it runs on HPU).
GAUDI_DDP_DEFAULTS: Mapping[str, Any] = {"bucket_cap_mb": 230, "gradient_as_bucket_view": True}


def with_gaudi_ddp_defaults(ddp_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """``ddp_kwargs`` with :data:`GAUDI_DDP_DEFAULTS` for the arguments not given; a value given always wins."""
    return {**GAUDI_DDP_DEFAULTS, **ddp_kwargs}


def hccl_backend_name(world_size: int, global_rank: int, local_rank: int, requested: str | None) -> str:
    """Prepare this process for HCCL (``initialize_distributed_hpu``); the process-group backend to use.

    ``requested`` is the user's ``process_group_backend``; without one it is the backend's (``"hccl"``).
    """
    backend = collectives.initialize_hccl(world_size, global_rank, local_rank)
    return requested or backend


def init_hccl_process_group(
    cluster_environment: ClusterEnvironment | None,
    world_size: int,
    global_rank: int,
    local_rank: int,
    process_group_backend: str | None,
    timeout: timedelta | None,
) -> str:
    """Create the default process group over HCCL (the stand-in's ``"hccl"`` group on the CPU); return its name.

    Every HPU strategy that makes the default group (DDP, FSDP, model parallel; Trainer and Fabric) goes through
    here.
    """
    name = hccl_backend_name(world_size, global_rank, local_rank, process_group_backend)
    assert cluster_environment is not None
    store = elastic.attempt_store(timeout)
    if store is None:
        _init_dist_connection(cluster_environment, name, timeout=timeout)
    else:
        _init_dist_connection(cluster_environment, name, timeout=timeout, store=store)
    return name


class HCCLCollectiveOps(RankWatchdogHooks, SigtermAgreement, ParallelStrategy):
    """Trainer mixin: ``reduce``, ``all_gather`` and ``broadcast`` with the ops and dtypes HCCL runs.

    It also brings :class:`SigtermAgreement`, so every HPU parallel strategy stops all ranks on SIGTERM without a
    per-step device broadcast, and :class:`RankWatchdogHooks`, so no rank outlives a failed job.
    """

    @property
    def process_group_backend(self) -> str | None:
        """``"hccl"`` (or the backend passed), known before the process group exists, as lightning-habana's was."""
        return getattr(self, "_process_group_backend", None) or require_backend().process_group_backend

    @override
    def reduce(self, tensor: Tensor, group: Any | None = None, reduce_op: ReduceOp | str | None = "mean") -> Tensor:
        """Reduce ``tensor`` over processes (``"mean"`` by default) with ops HCCL runs; non-tensors pass through."""
        if isinstance(tensor, Tensor):
            return collectives.all_reduce(tensor, group=group, reduce_op=reduce_op)
        return tensor

    @override
    def all_gather(self, tensor: Tensor, group: Any | None = None, sync_grads: bool = False) -> Tensor:
        return collectives.all_gather(tensor, group=group, sync_grads=sync_grads)

    @override
    def broadcast(self, obj: TBroadcast, src: int = 0) -> TBroadcast:
        return collectives.broadcast_object(obj, src=src, device=self.root_device)


class HCCLCollectivesHooks(HCCLCollectiveOps, DDPStrategy):
    """Trainer mixin: HCCL process group and HCCL-safe collectives for a ``DDPStrategy`` subclass."""

    @override
    def setup_distributed(self) -> None:
        reset_seed()
        self.set_world_ranks()
        self._process_group_backend = init_hccl_process_group(
            self.cluster_environment,
            self.world_size,
            self.global_rank,
            self.local_rank,
            self._process_group_backend,
            self._timeout,
        )

    @override
    def _get_process_group_backend(self) -> str:
        return hccl_backend_name(self.world_size, self.global_rank, self.local_rank, self._process_group_backend)

    @override
    def determine_ddp_device_ids(self) -> list[int] | None:
        # The bridge binds each process to its HPU; DDP is given no device index.
        return None


class FabricHCCLCollectiveOps(FabricRankWatchdogHooks, FabricParallelStrategy):
    """Fabric mixin: ``all_reduce``, ``all_gather`` and ``broadcast`` with the ops and dtypes HCCL runs.

    It also brings :class:`FabricRankWatchdogHooks`, so no rank outlives a failed job.
    """

    @property
    def process_group_backend(self) -> str | None:
        """``"hccl"`` (or the backend passed), known before the process group exists, as lightning-habana's was."""
        return getattr(self, "_process_group_backend", None) or require_backend().process_group_backend

    @override
    def all_reduce(
        self, tensor: Tensor | Any, group: Any | None = None, reduce_op: ReduceOp | str | None = "mean"
    ) -> Tensor | Any:
        if isinstance(tensor, Tensor):
            return collectives.all_reduce(tensor, group=group, reduce_op=reduce_op)
        return tensor

    @override
    def all_gather(self, tensor: Tensor, group: Any | None = None, sync_grads: bool = False) -> Tensor:
        return collectives.all_gather(tensor, group=group, sync_grads=sync_grads)

    @override
    def broadcast(self, obj: TBroadcast, src: int = 0) -> TBroadcast:
        return collectives.broadcast_object(obj, src=src, device=self.root_device)


class FabricHCCLCollectivesHooks(FabricHCCLCollectiveOps, FabricDDPStrategy):
    """Fabric mixin: HCCL process group and HCCL-safe collectives for a Fabric ``DDPStrategy`` subclass."""

    @override
    def _setup_distributed(self) -> None:
        self._set_world_ranks()
        self._process_group_backend = init_hccl_process_group(
            self.cluster_environment,
            self.world_size,
            self.global_rank,
            self.local_rank,
            self._process_group_backend,
            self._timeout,
        )

    @override
    def _get_process_group_backend(self) -> str:
        return hccl_backend_name(self.world_size, self.global_rank, self.local_rank, self._process_group_backend)

    @override
    def _determine_ddp_device_ids(self) -> list[int] | None:
        return None
