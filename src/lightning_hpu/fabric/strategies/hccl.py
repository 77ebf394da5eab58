"""HCCL for Fabric's HPU strategies: the process group and collectives of :mod:`lightning_hpu.distributed.hccl`.

:class:`~lightning_hpu.distributed.hccl_collectives.HCCLCollectiveHooks` (HCCL-safe ``all_gather`` and ``broadcast``,
the process-group backend, and the rank watchdog) is written once for both sides, below both; the Trainer's mixins
(:mod:`lightning_hpu.pytorch.strategies.hccl`) build on it as Fabric's do here: :class:`FabricHCCLParallelHooks`
(collectives, ``all_reduce`` and the rank watchdog) is in every HPU parallel strategy of Fabric,
:class:`FabricHCCLDDPHooks` adds the HCCL process group for a Fabric ``DDPStrategy`` subclass, and
:class:`FabricHCCLProcessGroupHooks` for the strategies that keep Lightning's ``_setup_distributed`` (FSDP, model
parallel).
"""

from __future__ import annotations

from typing import Any, TypeVar

from lightning.fabric.strategies import DDPStrategy, ParallelStrategy
from lightning.fabric.strategies.launchers import _MultiProcessingLauncher, _SubprocessScriptLauncher
from lightning.fabric.utilities.seed import reset_seed
from lightning.fabric.utilities.types import ReduceOp
from torch import Tensor
from typing_extensions import override

from lightning_hpu.distributed import collectives
from lightning_hpu.distributed.hccl import HCCLBackendHooks, init_hccl_process_group
from lightning_hpu.distributed.hccl_collectives import HCCLCollectiveHooks
from lightning_hpu.distributed.rank_watchdog_hooks import abort_on_uncaught_exception

_T = TypeVar("_T")


class FabricHCCLParallelHooks(HCCLCollectiveHooks, ParallelStrategy):
    """Fabric mixin: HCCL-safe collectives (``all_reduce`` too) and the rank watchdog; a rank's uncaught exception
    stops every rank (Fabric has no exception hook of its own)."""

    rank_launchers = (_SubprocessScriptLauncher, _MultiProcessingLauncher)

    @override
    def all_reduce(
        self, tensor: Tensor | Any, group: Any | None = None, reduce_op: ReduceOp | str | None = "mean"
    ) -> Tensor | Any:
        return collectives.all_reduce_if_tensor(tensor, group=group, reduce_op=reduce_op)

    @override
    def start_rank_watchdog(self) -> None:
        if self._watchdog is None:
            super().start_rank_watchdog()
            if self._watchdog is not None:
                abort_on_uncaught_exception(self._watchdog, self.global_rank)


class FabricHCCLDDPHooks(FabricHCCLParallelHooks, HCCLBackendHooks, DDPStrategy):
    """Fabric mixin: HCCL process group and HCCL-safe collectives for a Fabric ``DDPStrategy`` subclass."""

    @override
    def _setup_distributed(self) -> None:
        self._set_world_ranks()
        self._process_group_backend = init_hccl_process_group(self)

    @override
    def _determine_ddp_device_ids(self) -> list[int] | None:
        return None


class FabricHCCLProcessGroupHooks(ParallelStrategy):
    """Fabric mixin: the default process group over HCCL, for strategies that keep Lightning's
    ``_setup_distributed`` name (FSDP and model parallel)."""

    _process_group_backend: str | None

    def _setup_distributed(self) -> None:
        reset_seed()
        self._set_world_ranks()  # type: ignore[attr-defined]
        self._process_group_backend = init_hccl_process_group(self)
