"""Fabric FSDP over HCCL; the Trainer's counterpart is :mod:`lightning_hpu.pytorch.strategies.fsdp`.

Both share their code, below both trees (:class:`~lightning_hpu.distributed.fsdp_hooks.FSDPHooks`, and
:mod:`lightning_hpu.distributed`'s ``sharding`` and ``fsdp_state``):
HCCL process group, eager mode only, FSDP on this process's HPU, HCCL-safe ``all_reduce``/``all_gather``/
``broadcast``, sharded checkpoints through ``torch.distributed.checkpoint``.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from lightning.fabric.strategies import FSDPStrategy
from lightning.fabric.strategies.fsdp import _is_sharded_checkpoint
from lightning.fabric.utilities.types import _PATH
from torch.nn import Module
from torch.optim import Optimizer
from typing_extensions import override

from lightning_hpu.distributed import fsdp_state, sharding
from lightning_hpu.distributed.fsdp_hooks import FSDPHooks
from lightning_hpu.distributed.hccl import HCCLProcessGroupHooks
from lightning_hpu.distributed.strategy_parts import PrecisionPluginAttribute
from lightning_hpu.fabric.plugins.fsdp_precision import HPUFSDPPrecision
from lightning_hpu.fabric.strategies.base import FabricHPUStrategyHooks
from lightning_hpu.fabric.strategies.hccl import FabricHCCLParallelHooks

#: Lightning's Fabric FSDP refuses a filter for a sharded checkpoint with these words (a full one, it filters).
SHARDED_FILTER_REFUSAL = "FSDP doesn't support loading sharded filtered checkpoints, so saving them is disabled. "


class HPUFSDPStrategy(FabricHPUStrategyHooks, FabricHCCLParallelHooks, HCCLProcessGroupHooks, FSDPHooks, FSDPStrategy):
    """Fabric FSDP over HCCL (``strategy="hpu_fsdp"``; ``"fsdp"`` maps here on HPU). Arguments as Lightning's."""

    precision_type = HPUFSDPPrecision
    #: Only an :class:`HPUFSDPPrecision` (``"32-true"`` until one is set): FSDP's mixed precision is the plugin's.
    precision = PrecisionPluginAttribute(HPUFSDPPrecision, "Fabric")  # type: ignore[override]  # setter: any plugin

    @override
    def _given_fsdp_kwargs(self) -> dict[str, Any]:
        return self._fsdp_kwargs

    @override
    def setup_module(self, module: Module) -> Module:
        return sharding.wrap_fsdp(
            module, activation_checkpointing_kwargs=self._activation_checkpointing_kwargs, **self._wrap_kwargs()
        )

    @override
    def module_sharded_context(self) -> AbstractContextManager:
        return sharding.fsdp_wrap_context(**self._wrap_kwargs())

    @override
    def save_checkpoint(
        self,
        path: _PATH,
        state: dict[str, Module | Optimizer | Any],
        storage_options: Any | None = None,
        filter: dict[str, Callable[[str, Any], bool]] | None = None,
    ) -> None:
        """Save like Lightning's Fabric FSDP (a file for ``state_dict_type="full"``, else a folder of shards); what it
        refuses is refused in its words (``tests/lightning_hpu/integration/test_lightning_error_text.py``)."""
        if storage_options is not None:
            raise TypeError(
                "`FSDPStrategy.save_checkpoint(..., storage_options=...)` is not supported because `FSDPStrategy` does"
                " not use the `CheckpointIO`. HPUFSDPStrategy saves through torch.distributed.checkpoint: drop"
                " `storage_options`."
            )
        if filter is not None:
            lightning_message = "" if self._state_dict_type == "full" else SHARDED_FILTER_REFUSAL
            raise NotImplementedError(
                f"{lightning_message}HPUFSDPStrategy.save_checkpoint does not filter what it saves: drop `filter`, and"
                " leave out of `state` what should not be saved."
            )
        target = Path(self.broadcast(path))
        fsdp_state.save_fabric_state(target, state, full=self._state_dict_type == "full", rank=self.global_rank)
        self.barrier()

    @override
    def load_checkpoint(
        self,
        path: _PATH,
        state: Module | Optimizer | dict[str, Module | Optimizer | Any] | None = None,
        strict: bool = True,
        weights_only: bool | None = None,
    ) -> dict[str, Any]:
        """Load a folder of shards through ``torch.distributed.checkpoint``; full files as Lightning does."""
        source = Path(self.broadcast(path))
        if isinstance(state, dict) and _is_sharded_checkpoint(source):
            return fsdp_state.load_fabric_sharded_state(source, state, strict=strict)
        return super().load_checkpoint(source, state, strict=strict, weights_only=weights_only)
