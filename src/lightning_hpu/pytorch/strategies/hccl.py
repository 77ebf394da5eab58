"""The Trainer's HCCL mixins: the process group and collectives of :mod:`lightning_hpu.distributed.hccl`.

Mix :class:`HCCLCollectivesHooks` in before a ``DDPStrategy`` subclass (``HPUParallelStrategy``) for the HCCL process
group and collectives; the DeepSpeed strategy, which makes its own process group, and the sharded strategies (FSDP,
model parallel), which make theirs in their own setup, take only the collectives (:class:`HCCLCollectiveOps`):
``reduce``, ``all_gather`` and ``broadcast`` through :mod:`lightning_hpu.distributed.collectives` (no ``AVG`` or
``PRODUCT`` reduce, and no ``int64`` tensor where the device holds it as ``int32``, reaches HCCL), SIGTERM agreed on
over a host-side group (:class:`~lightning_hpu.pytorch.strategies.sigterm.SigtermAgreement`), and the rank watchdog.
Fabric's twins are in :mod:`lightning_hpu.fabric.strategies.hccl`.
"""

from __future__ import annotations

from typing import Any

from lightning.fabric.utilities.seed import reset_seed
from lightning.fabric.utilities.types import ReduceOp
from lightning.pytorch.strategies import DDPStrategy, ParallelStrategy
from lightning.pytorch.strategies.strategy import TBroadcast
from torch import Tensor
from typing_extensions import override

from lightning_hpu.distributed import collectives, hccl
from lightning_hpu.distributed.hccl import GAUDI_DDP_DEFAULTS, init_hccl_process_group, with_gaudi_ddp_defaults
from lightning_hpu.pytorch.strategies.rank_watchdog import RankWatchdogHooks
from lightning_hpu.pytorch.strategies.sigterm import SigtermAgreement

__all__ = [
    "GAUDI_DDP_DEFAULTS",
    "HCCLCollectiveOps",
    "HCCLCollectivesHooks",
    "init_hccl_process_group",
    "with_gaudi_ddp_defaults",
]


class HCCLCollectiveOps(RankWatchdogHooks, SigtermAgreement, ParallelStrategy):
    """Trainer mixin: ``reduce``, ``all_gather`` and ``broadcast`` with the ops and dtypes HCCL runs.

    It also brings :class:`SigtermAgreement`, so every HPU parallel strategy stops all ranks on SIGTERM without a
    per-step device broadcast, and :class:`RankWatchdogHooks`, so no rank outlives a failed job.
    """

    @property
    def process_group_backend(self) -> str | None:
        """``"hccl"`` (or the backend passed), known before the process group exists, as lightning-habana's was."""
        return hccl.process_group_backend(self)

    @override
    def reduce(self, tensor: Tensor, group: Any | None = None, reduce_op: ReduceOp | str | None = "mean") -> Tensor:
        """Reduce ``tensor`` over processes (``"mean"`` by default) with ops HCCL runs; non-tensors pass through."""
        return collectives.all_reduce_if_tensor(tensor, group=group, reduce_op=reduce_op)

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
        self._process_group_backend = init_hccl_process_group(self)

    @override
    def _get_process_group_backend(self) -> str:
        return hccl.hccl_backend_name(self)

    @override
    def determine_ddp_device_ids(self) -> list[int] | None:
        # The bridge binds each process to its HPU; DDP is given no device index.
        return None
