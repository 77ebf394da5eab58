"""HCCL for Fabric's HPU strategies: the process group and collectives of :mod:`lightning_hpu.distributed.hccl`.

:class:`~lightning_hpu.distributed.hccl_collectives.HCCLCollectiveHooks` (HCCL-safe ``all_gather`` and ``broadcast``,
the process-group backend, and the rank watchdog) is written once for both sides, below both; the Trainer's mixins
(:mod:`lightning_hpu.pytorch.strategies.hccl`) build on it as Fabric's do here: :class:`FabricHCCLParallelHooks`
(collectives, ``all_reduce``, the rank watchdog and its end with the run) is in every HPU parallel strategy of Fabric,
and :class:`FabricHCCLDDPHooks` adds the HCCL process group for a Fabric ``DDPStrategy`` subclass. The process group of
the FSDP and model-parallel strategies is the piece both trees share,
:class:`~lightning_hpu.distributed.hccl.HCCLProcessGroupHooks`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from lightning.fabric.strategies import DDPStrategy, ParallelStrategy
from lightning.fabric.strategies.launchers import _MultiProcessingLauncher, _SubprocessScriptLauncher
from lightning.fabric.utilities.types import ReduceOp
from torch import Tensor
from typing_extensions import override

from lightning_hpu.distributed import collectives
from lightning_hpu.distributed.hccl import HCCLProcessGroupHooks
from lightning_hpu.distributed.hccl_collectives import HCCLCollectiveHooks
from lightning_hpu.distributed.rank_watchdog_hooks import stop_with_run

_T = TypeVar("_T")


class FabricHCCLParallelHooks(HCCLCollectiveHooks, ParallelStrategy):
    """Fabric mixin: HCCL-safe collectives (``all_reduce`` too) and the rank watchdog; a rank's uncaught exception
    stops every rank (Fabric has no exception hook of its own). Fabric never tears its strategy down: the watchdog and
    the exception hook end with the run all the same (:func:`~lightning_hpu.distributed.rank_watchdog_hooks.
    stop_with_run`)."""

    rank_launchers = (_SubprocessScriptLauncher, _MultiProcessingLauncher)
    #: Ends this run's watchdog and exception hook (once, whoever calls it first).
    _end_run: Callable[[], object] | None = None

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
                self._end_run = stop_with_run(self, self._watchdog, self.global_rank)

    @override
    def stop_rank_watchdog(self) -> None:
        if self._end_run is not None:
            self._end_run()
            self._end_run = None
        super().stop_rank_watchdog()


class FabricHCCLDDPHooks(FabricHCCLParallelHooks, HCCLProcessGroupHooks, DDPStrategy):
    """Fabric mixin: HCCL process group and HCCL-safe collectives for a Fabric ``DDPStrategy`` subclass."""

    reset_seed_at_setup = False  # as Lightning's Fabric DDPStrategy, which does not seed again at set-up

    @override
    def _determine_ddp_device_ids(self) -> list[int] | None:
        return None
