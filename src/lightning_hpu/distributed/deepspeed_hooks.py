"""What both ``HPUDeepSpeedStrategy`` classes (Trainer and Fabric) change in Lightning's, written once below both
trees: the checks before any process starts, and HCCL prepared before DeepSpeed makes its process group."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from typing_extensions import override

from lightning_hpu.device.selection import selection_of
from lightning_hpu.distributed.deepspeed_config import check_deepspeed_for_device, prepare_hccl_for_deepspeed
from lightning_hpu.distributed.strategy_methods import StrategyMethods, skipping_next
from lightning_hpu.runtime import require_backend

if TYPE_CHECKING:

    class _DeepSpeedMethods(StrategyMethods):
        _process_group_backend: str | None
        config: dict[str, Any] | None

        def _get_process_group_backend(self) -> str: ...
        def _init_deepspeed_distributed(self) -> None: ...

else:
    _DeepSpeedMethods = StrategyMethods


class DeepSpeedHooks(_DeepSpeedMethods):
    """What both ``HPUDeepSpeedStrategy`` classes (Trainer and Fabric) change in Lightning's: the checks before any
    process starts, no CUDA check at set-up, and HCCL prepared before DeepSpeed makes its process group. Mix it in
    right before ``DeepSpeedStrategy``."""

    _requested_devices: int | None

    def validate_for_device(self) -> None:
        """Refuse what the HPU cannot run, and warn where the Intel Gaudi software lists a limitation."""
        raise NotImplementedError

    def _check_for_device(self, precision: str, inference_config: dict[str, Any], owner: str) -> None:
        """:func:`check_deepspeed_for_device` on this strategy's config and devices (``owner``: whose messages)."""
        assert self.config is not None
        devices = len(self.parallel_devices or [])
        check_deepspeed_for_device(self.config, precision, self._requested_devices, devices, inference_config, owner)

    @override
    def _configure_launcher(self) -> None:
        # The connector calls this once the accelerator and precision are known, before any process starts.
        self.validate_for_device()
        super()._configure_launcher()

    @override
    def setup_environment(self) -> None:
        """Every piece's set-up (the mixins before this one reach it through ``super()``: the rank watchdog starts
        once it returns), without ``DeepSpeedStrategy``'s own, whose CUDA-only accelerator check refuses the HPU (the
        connector already requires the HPU accelerator): on to the accelerator and the process group."""
        skipping_next(self, DeepSpeedHooks, "setup_environment")()

    @override
    def _get_process_group_backend(self) -> str:
        return self._process_group_backend or require_backend().process_group_backend

    @override
    def _init_deepspeed_distributed(self) -> None:
        prepare_hccl_for_deepspeed(
            self.world_size, self.global_rank, self.local_rank, self._timeout, selection_of(self)
        )
        super()._init_deepspeed_distributed()


__all__ = ["DeepSpeedHooks"]
