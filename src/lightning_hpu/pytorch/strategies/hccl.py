"""The Trainer's HCCL mixins: the process group and collectives of :mod:`lightning_hpu.distributed.hccl`.

:class:`HCCLParallelHooks` is in every HPU parallel strategy of the Trainer: ``reduce``, ``all_gather`` and
``broadcast`` through :mod:`lightning_hpu.distributed.collectives` (no ``AVG`` or ``PRODUCT`` reduce, and no ``int64``
tensor where the device holds it as ``int32``, reaches HCCL), SIGTERM agreed on over a host-side group
(:class:`~lightning_hpu.pytorch.strategies.sigterm.SigtermAgreementHooks`), and the rank watchdog. The DeepSpeed
strategy makes its own process group; the sharded strategies (FSDP, model parallel) take it from the piece both trees
share, :class:`~lightning_hpu.distributed.hccl.HCCLProcessGroupHooks`, and a ``DDPStrategy`` subclass
(``HPUParallelStrategy``) takes :class:`HCCLDDPHooks`, which makes that group at DDP's ``setup_distributed``. What both
sides share is written once, below both, in :mod:`lightning_hpu.distributed.hccl_collectives` and
:mod:`lightning_hpu.distributed.hccl`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lightning.fabric.utilities.types import ReduceOp
from lightning.pytorch.strategies import DDPStrategy, ParallelStrategy
from lightning.pytorch.strategies.launchers import _MultiProcessingLauncher, _SubprocessScriptLauncher
from torch import Tensor
from typing_extensions import override

from lightning_hpu.distributed import collectives
from lightning_hpu.distributed.hccl import (
    GAUDI_DDP_DEFAULTS,
    HCCLProcessGroupHooks,
    init_hccl_process_group,
    with_gaudi_ddp_defaults,
)
from lightning_hpu.distributed.hccl_collectives import HCCLCollectiveHooks
from lightning_hpu.distributed.rank_watchdog import report_abort
from lightning_hpu.pytorch.strategies.sigterm import SigtermAgreementHooks

__all__ = [
    "GAUDI_DDP_DEFAULTS",
    "HCCLDDPHooks",
    "HCCLParallelHooks",
    "init_hccl_process_group",
    "with_gaudi_ddp_defaults",
]


def _noted_step(stage: str) -> Callable[..., Any]:
    """The Trainer's ``<stage>_step`` for :class:`HCCLParallelHooks`: noted for the rank watchdog's report (``"training
    step 4"``), then Lightning's. One override, made for each of the four step methods."""

    def step(self: HCCLParallelHooks, *args: Any, **kwargs: Any) -> Any:
        self._note_step(stage)
        return getattr(super(HCCLParallelHooks, self), f"{stage}_step")(*args, **kwargs)

    step.__name__ = step.__qualname__ = f"{stage}_step"
    return step


class HCCLParallelHooks(HCCLCollectiveHooks, SigtermAgreementHooks, ParallelStrategy):
    """Trainer mixin: HCCL-safe collectives (``reduce`` too), the rank watchdog following each step, SIGTERM agreed on.

    With :class:`SigtermAgreementHooks` every HPU parallel strategy stops all ranks on SIGTERM without a per-step device
    broadcast; with the rank watchdog (:class:`~lightning_hpu.distributed.rank_watchdog_hooks.RankWatchdogHooks`) no
    rank outlives a failed job, and the watchdog's report names the step each rank was in.
    """

    rank_launchers = (_SubprocessScriptLauncher, _MultiProcessingLauncher)
    _steps_started: dict[str, int] | None = None

    @override
    def reduce(self, tensor: Tensor, group: Any | None = None, reduce_op: ReduceOp | str | None = "mean") -> Tensor:
        """Reduce ``tensor`` over processes (``"mean"`` by default) with ops HCCL runs; non-tensors pass through."""
        return collectives.all_reduce_if_tensor(tensor, group=group, reduce_op=reduce_op)

    @override
    def start_rank_watchdog(self) -> None:
        super().start_rank_watchdog()
        self._steps_started = {}

    def _note_step(self, stage: str) -> None:
        if self._watchdog is not None and self._steps_started is not None:
            count = self._steps_started[stage] = self._steps_started.get(stage, 0) + 1
            self._watchdog.note(f"{stage} step {count}")

    training_step = override(_noted_step("training"))
    validation_step = override(_noted_step("validation"))
    test_step = override(_noted_step("test"))
    predict_step = override(_noted_step("predict"))

    @override
    def on_exception(self, exception: BaseException) -> None:
        super().on_exception(exception)
        if self._watchdog is None or isinstance(exception, KeyboardInterrupt):
            return
        reason = report_abort(self._watchdog, self.global_rank, exception)
        if hasattr(exception, "add_note"):
            exception.add_note(f"lightning-hpu: {reason}")


class HCCLDDPHooks(HCCLParallelHooks, HCCLProcessGroupHooks, DDPStrategy):
    """Trainer mixin: HCCL process group and HCCL-safe collectives for a ``DDPStrategy`` subclass."""

    @override
    def setup_distributed(self) -> None:
        self._setup_distributed()

    @override
    def determine_ddp_device_ids(self) -> list[int] | None:
        # The bridge binds each process to its HPU; DDP is given no device index.
        return None
