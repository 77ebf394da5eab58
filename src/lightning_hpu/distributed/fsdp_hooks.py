"""What both ``HPUFSDPStrategy`` classes (Trainer and Fabric) add to Lightning's, written once below both trees."""

from __future__ import annotations

from typing import Any

from typing_extensions import override

from lightning_hpu.distributed import sharding
from lightning_hpu.distributed.strategy_methods import StrategyMethods, skipping_next


class FSDPHooks(StrategyMethods):
    """What both ``HPUFSDPStrategy`` classes (Trainer and Fabric) add to Lightning's: the checks before launch, the
    precision plugin the connector gives, the set-up on the HPU and FSDP's wrapping arguments. Mix it in right before
    ``FSDPStrategy``."""

    strategy_name = "hpu_fsdp"
    #: This side's HPU FSDP precision plugin class.
    precision_type: type[Any]
    sharding_strategy: Any
    cpu_offload: Any
    mixed_precision_config: Any

    @classmethod
    def hpu_precision(cls, precision: str) -> Any:
        """The precision plugin the connector gives this strategy for ``precision=...`` on HPU."""
        return cls.precision_type(precision)

    @override
    def _configure_launcher(self) -> None:
        sharding.check_before_launch(
            self.strategy_name, self.num_nodes, self.num_processes, sharding_strategy=self.sharding_strategy
        )
        super()._configure_launcher()

    @override
    def setup_environment(self) -> None:
        """The accelerator, HCCL's process group and FSDP's device mesh on the HPU, in place of what Lightning's
        ``FSDPStrategy`` does here (its process group and mesh assume CUDA). Reached through the mixins before this
        one (the rank watchdog starts once it returns)."""
        skipping_next(self, FSDPHooks, "setup_environment")()  # what every strategy sets up: the accelerator
        self._setup_distributed()
        sharding.set_fsdp_device_mesh(
            self._given_fsdp_kwargs(), self.sharding_strategy, self.num_nodes, self.num_processes
        )

    def _setup_distributed(self) -> None:
        """Seed, ranks and the default process group over HCCL: :class:`~lightning_hpu.distributed.hccl.
        HCCLProcessGroupHooks`, mixed in before this piece."""
        raise NotImplementedError

    def _given_fsdp_kwargs(self) -> dict[str, Any]:
        """The keyword arguments for FSDP the strategy was given (each side's Lightning keeps them under its name)."""
        raise NotImplementedError

    @classmethod
    @override
    def register_strategies(cls, strategy_registry: Any) -> None:
        sharding.register_fsdp_names(cls, strategy_registry)

    def _wrap_kwargs(self) -> dict[str, Any]:
        """What FSDP wraps the model with: the strategy's settings and the keyword arguments it was given."""
        return {
            "cpu_offload": self.cpu_offload,
            "mixed_precision": self.mixed_precision_config,
            "sharding_strategy": self.sharding_strategy,
            **self._given_fsdp_kwargs(),
        }


__all__ = ["FSDPHooks"]
