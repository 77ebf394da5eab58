"""Fully Sharded Data Parallel on HPUs for the Trainer: Lightning's ``FSDPStrategy`` over HCCL."""

from __future__ import annotations

from collections.abc import Generator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from lightning.fabric.strategies.fsdp import _is_sharded_checkpoint
from lightning.fabric.utilities.load import _METADATA_FILENAME
from lightning.fabric.utilities.types import _PATH
from lightning.pytorch.core.optimizer import LightningOptimizer
from lightning.pytorch.strategies import FSDPStrategy
from lightning.pytorch.trainer.states import TrainerFn
from torch.nn import Module
from torch.optim import Optimizer
from typing_extensions import override

from lightning_hpu.distributed import fsdp_state, sharding
from lightning_hpu.distributed.fsdp_hooks import FSDPHooks
from lightning_hpu.distributed.hccl import HCCLProcessGroupHooks
from lightning_hpu.distributed.strategy_parts import PrecisionPluginAttribute
from lightning_hpu.pytorch.plugins.fsdp_precision import HPUFSDPPrecisionPlugin
from lightning_hpu.pytorch.strategies.base import HPUStrategyHooks
from lightning_hpu.pytorch.strategies.hccl import HCCLParallelHooks


class HPUFSDPStrategy(HPUStrategyHooks, HCCLParallelHooks, HCCLProcessGroupHooks, FSDPHooks, FSDPStrategy):
    """FSDP over HCCL on several HPUs and nodes (``strategy="hpu_fsdp"``; ``"fsdp"`` maps here on HPU).

    Every argument of Lightning's ``FSDPStrategy`` keeps its meaning (``auto_wrap_policy``,
    ``activation_checkpointing_policy``, ``cpu_offload``, ``sharding_strategy``, ``device_mesh``,
    ``state_dict_type``, ``mixed_precision``, ``limit_all_gathers``, ``use_orig_params``, ...). On HPU:

    * the process group is HCCL's, and FSDP's gradient reduce-scatter is a ``SUM`` with divide factors (never
      ``AVG``); ``self.log(..., sync_dist=True)`` and ``strategy.reduce`` use the HCCL-safe collectives;
    * ``precision`` maps onto FSDP's mixed precision (:class:`~lightning_hpu.HPUFSDPPrecisionPlugin`), and clipping
      by norm works across shards;
    * eager mode only (``PT_HPU_LAZY_MODE`` unset or ``0``): Intel runs FSDP on Gaudi eagerly;
    * ``sharding_strategy="HYBRID_SHARD"`` on one node runs as ``FULL_SHARD`` (with a warning), as in torch.
    """

    precision_type = HPUFSDPPrecisionPlugin
    #: Only an :class:`HPUFSDPPrecisionPlugin` (``"32-true"`` until one is set): FSDP's mixed precision is the plugin's.
    precision_plugin = PrecisionPluginAttribute(HPUFSDPPrecisionPlugin, "Trainer")  # type: ignore[override]  # setter: any plugin

    @override
    def _given_fsdp_kwargs(self) -> dict[str, Any]:
        return self.kwargs

    @override
    def _setup_model(self, model: Module) -> Module:
        model = sharding.wrap_fsdp(
            model, activation_checkpointing_kwargs=self._activation_checkpointing_kwargs, **self._wrap_kwargs()
        )
        self.precision_plugin.sharded_module = model
        return model

    @contextmanager
    @override
    def model_sharded_context(self) -> Generator[None, None, None]:
        with sharding.fsdp_wrap_context(**self._wrap_kwargs()):
            yield

    @override
    def lightning_module_state_dict(self) -> dict[str, Any]:
        assert self.model is not None
        if self._state_dict_type == "sharded":
            return fsdp_state.sharded_model_state(self.model)
        with fsdp_state.full_state_dict_context(self.model):
            return self.model.state_dict()

    @override
    def optimizer_state(self, optimizer: Optimizer) -> dict[str, Any]:
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        from torch.distributed.fsdp import OptimStateKeyType

        if isinstance(optimizer, LightningOptimizer):
            optimizer = optimizer._optimizer
        assert self.model is not None
        if self._state_dict_type == "sharded":
            return fsdp_state.sharded_optimizer_state(self.model, optimizer)
        with fsdp_state.full_state_dict_context(self.model):
            state = FSDP.optim_state_dict(self.model, optimizer)
            if self.global_rank == 0:  # the plain optimizer's layout, keyed by parameter index
                state = FSDP.rekey_optim_state_dict(state, OptimStateKeyType.PARAM_ID, self.model)
            return state

    @override
    def load_checkpoint(self, checkpoint_path: _PATH, weights_only: bool | None = None) -> dict[str, Any]:
        path = Path(self.broadcast(checkpoint_path))
        if not _is_sharded_checkpoint(path):
            return super().load_checkpoint(path, weights_only=weights_only)
        assert self.model is not None
        assert self.lightning_module is not None
        fitting = self.lightning_module.trainer.state.fn == TrainerFn.FITTING
        fsdp_state.load_sharded(
            path,
            self.model,
            self.optimizers if fitting else [],
            model_key="model",
            strict=self.lightning_module.strict_loading,
        )
        metadata: dict[str, Any] = torch.load(path / _METADATA_FILENAME, weights_only=weights_only)
        return metadata

    @override
    def load_model_state_dict(self, checkpoint: Mapping[str, Any], strict: bool = True) -> None:
        pass  # loaded in ``load_checkpoint``
