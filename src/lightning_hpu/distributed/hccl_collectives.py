"""HCCL-safe collectives for every HPU parallel strategy, written once for the Trainer and Fabric (below both trees).

Each side's HCCL mixins (:mod:`lightning_hpu.fabric.strategies.hccl`, :mod:`lightning_hpu.pytorch.strategies.hccl`)
build on :class:`HCCLCollectiveHooks` and add their own reduce.
"""

from __future__ import annotations

from typing import Any, TypeVar

from torch import Tensor
from typing_extensions import override

from lightning_hpu.distributed import collectives, hccl
from lightning_hpu.distributed.rank_watchdog_hooks import RankWatchdogHooks

_T = TypeVar("_T")


class HCCLCollectiveHooks(RankWatchdogHooks):
    """Strategy mixin (Trainer and Fabric): ``all_gather`` and ``broadcast`` with the ops and dtypes HCCL runs, the
    process-group backend known early, and the rank watchdog (:class:`RankWatchdogHooks`), so no rank outlives a
    failed job. Each side adds its own reduce (Fabric's ``all_reduce``, the Trainer's ``reduce``)."""

    @property
    def process_group_backend(self) -> str | None:
        """``"hccl"`` (or the backend passed), known before the process group exists, as lightning-habana's was."""
        return hccl.process_group_backend(self)

    @override
    def all_gather(self, tensor: Tensor, group: Any | None = None, sync_grads: bool = False) -> Tensor:
        return collectives.all_gather(tensor, group=group, sync_grads=sync_grads)

    @override
    def broadcast(self, obj: _T, src: int = 0) -> _T:
        return collectives.broadcast_object(obj, src=src, device=self.root_device)


__all__ = ["HCCLCollectiveHooks"]
