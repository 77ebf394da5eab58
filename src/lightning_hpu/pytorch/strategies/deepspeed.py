"""DeepSpeed on HPU: Lightning's :class:`DeepSpeedStrategy` with the few CUDA assumptions replaced.

Lightning's strategy already drives ZeRO 1-3, offload, bf16, activation checkpointing and DeepSpeed's checkpoint
format. What stops it on a Gaudi is small, and is all that this subclass changes: the CUDA-only accelerator check,
the device-index check (every HPU process uses the unindexed ``hpu`` device), the process group (HCCL from the
runtime backend, prepared by the backend before DeepSpeed creates it), DeepSpeed's accelerator (``DS_ACCELERATOR``,
``hpu`` on a Gaudi and ``cpu`` on the stand-in) and the device rank handed to ``deepspeed.initialize``. It adds
DeepSpeed inference (``deepspeed.init_inference``) for ``trainer.predict`` and refuses, before any work starts,
combinations the device cannot run. The rules and setup it shares with Fabric's strategy are in
:mod:`lightning_hpu.distributed.deepspeed_config`.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

import torch
from lightning.fabric.utilities.seed import reset_seed
from lightning.pytorch import LightningModule
from lightning.pytorch.accelerators import Accelerator
from lightning.pytorch.core.optimizer import _MockOptimizer
from lightning.pytorch.strategies import DeepSpeedStrategy
from lightning.pytorch.strategies.strategy import _StrategyRegistry
from lightning.pytorch.utilities.exceptions import MisconfigurationException
from lightning.pytorch.utilities.model_helpers import is_overridden
from lightning.pytorch.utilities.rank_zero import rank_zero_info
from torch.nn import Module
from torch.optim import Optimizer
from typing_extensions import override

from lightning_hpu.distributed.deepspeed_config import (
    hpu_deepspeed_devices,
    inference_dtype,
    initialize_engine,
    mixed_inference_dtype,
    partition_activations_for_cpu_checkpointing,
    register_deepspeed_presets,
    split_inference_config,
)
from lightning_hpu.distributed.deepspeed_hooks import DeepSpeedHooks
from lightning_hpu.pytorch.strategies.base import HPUStrategyHooks
from lightning_hpu.pytorch.strategies.hccl import HCCLParallelHooks
from lightning_hpu.runtime import require_backend

if TYPE_CHECKING:
    import deepspeed


class HPUDeepSpeedStrategy(HPUStrategyHooks, HCCLParallelHooks, DeepSpeedHooks, DeepSpeedStrategy):
    """DeepSpeed (ZeRO 1-3, offload, bf16, activation checkpointing, inference) on HPUs.

    Args:
        accelerator: as Lightning's.
        parallel_devices: the HPUs of the processes (``[torch.device("hpu")] * n``) or their number ``n``; it must
            agree with ``Trainer(devices=...)``. Each process uses the unindexed HPU its runtime binds it to.
        tensor_parallel, dtype, replace_with_kernel_inject, injection_policy, enable_cuda_graph, replace_method:
            for ``trainer.predict`` with ``deepspeed.init_inference`` (also accepted as keys of ``config``; ``None``:
            not given; ``dtype`` defaults to the precision plugin's).
        process_group_backend: the ``torch.distributed`` backend; the runtime's (``"hccl"``) by default.
        **kwargs: every other argument of Lightning's :class:`~lightning.pytorch.strategies.DeepSpeedStrategy`
            (``stage``, ``offload_optimizer``, ``config``, ...), by name; LightningCLI offers them all.
    """

    strategy_name = "hpu_deepspeed"

    def __init__(
        self,
        accelerator: Accelerator | None = None,
        *,
        parallel_devices: list[torch.device] | int | None = None,
        tensor_parallel: dict[str, Any] | None = None,
        dtype: torch.dtype | None = None,
        replace_with_kernel_inject: bool | None = None,
        injection_policy: dict[Any, Any] | None = None,
        enable_cuda_graph: bool | None = None,
        replace_method: str | None = None,
        process_group_backend: str | None = None,
        **kwargs: Any,
    ) -> None:
        self._requested_devices, devices = hpu_deepspeed_devices(parallel_devices)
        super().__init__(
            accelerator=accelerator,
            parallel_devices=devices,
            process_group_backend=process_group_backend,
            **kwargs,
        )
        assert self.config is not None
        given = {
            "tensor_parallel": tensor_parallel,
            "dtype": dtype,
            "replace_with_kernel_inject": replace_with_kernel_inject,
            "injection_policy": injection_policy,
            "enable_cuda_graph": enable_cuda_graph,
            "replace_method": replace_method,
        }
        self.inference_config: dict[str, Any] = split_inference_config(self.config, given)
        partition_activations_for_cpu_checkpointing(self.config)

    # --- checks before any work -----------------------------------------------------------------
    @override
    def validate_for_device(self) -> None:
        """Refuse what the HPU cannot run, and warn where the Intel Gaudi software lists a limitation."""
        self._check_for_device(str(self.precision_plugin.precision), self.inference_config, owner="Trainer")

    # --- what Lightning's strategy assumes about CUDA (its set-up check is skipped by DeepSpeedHooks) -----
    @override
    def setup_distributed(self) -> None:
        # No device-index check: every HPU process uses the unindexed device its bridge binds to its local rank.
        reset_seed()
        self.set_world_ranks()
        self._init_deepspeed_distributed()

    @override
    def _initialize_deepspeed_train(self, model: Module) -> None:
        # The LightningModule's optimizer wins over the config's (Lightning would otherwise skip
        # ``configure_optimizers``); DeepSpeed itself already prefers the module's scheduler to the config's.
        assert self.config is not None and self.lightning_module is not None
        if "optimizer" in self.config and is_overridden("configure_optimizers", self.lightning_module, LightningModule):
            rank_zero_info("The DeepSpeed config's optimizer is ignored: `configure_optimizers` gives the optimizer.")
            self.config.pop("optimizer")
        super()._initialize_deepspeed_train(model)

    @override
    def _init_optimizers(self) -> tuple[Optimizer, Any]:
        optimizer, scheduler = super()._init_optimizers()
        if isinstance(optimizer, _MockOptimizer):  # what Lightning puts in for `configure_optimizers` returning None
            raise MisconfigurationException(
                "You have specified an invalid optimizer to be run with deepspeed: `configure_optimizers` returned no"
                " optimizer; return one, or give the DeepSpeed config an 'optimizer' section."
            )
        return optimizer, scheduler

    def _deepspeed_args(self) -> argparse.Namespace:
        """The ``args`` of ``deepspeed.initialize``: DeepSpeed binds its accelerator to ``device_rank``."""
        return argparse.Namespace(device_rank=self.local_rank)

    @override
    def _setup_model_and_optimizer(
        self,
        model: Module,
        optimizer: Optimizer | None,
        lr_scheduler: Any = None,
    ) -> tuple[deepspeed.DeepSpeedEngine, Optimizer]:
        assert self.config is not None
        root_device = None if self.zero_stage_3 else self.root_device
        engine, deepspeed_optimizer, _ = initialize_engine(
            model, self.config, self.local_rank, root_device, optimizer, lr_scheduler
        )
        return engine, deepspeed_optimizer

    # --- inference ------------------------------------------------------------------------------
    @override
    def _initialize_deepspeed_inference(self, model: Module) -> None:
        if not self.inference_config:
            self._initialize_inference_engine(model)
            return
        import deepspeed

        config = dict(self.inference_config)
        config.setdefault("dtype", inference_dtype(str(self.precision_plugin.precision)))
        model.to(self.root_device)
        self.model = deepspeed.init_inference(model, config=config)

    @override
    def predict_step(self, *args: Any, **kwargs: Any) -> Any:
        # fp32 inference weights under a mixed precision: compute in its dtype, as the precision means.
        dtype = mixed_inference_dtype(self.inference_config, str(self.precision_plugin.precision))
        if dtype is None:
            return super().predict_step(*args, **kwargs)
        with torch.autocast(require_backend().autocast_device_type, dtype=dtype):
            return super().predict_step(*args, **kwargs)

    def _initialize_inference_engine(self, model: Module) -> None:
        """Predict with a DeepSpeed engine without optimizer: the precision and ZeRO-3 settings of training."""
        import deepspeed

        assert self.config is not None
        keys = ["fp16", "bf16"]
        if self.zero_stage_3:
            keys += ["zero_optimization", "zero_allow_untested_optimizer"]
        config = {"train_micro_batch_size_per_gpu": 1, **{key: self.config[key] for key in keys if key in self.config}}
        if not self.zero_stage_3:
            model.to(self.root_device)
        self.model, _, _, _ = deepspeed.initialize(
            args=self._deepspeed_args(),
            config=config,
            model=model,
            model_parameters=[],
            dist_init_required=False,
        )

    @classmethod
    @override
    def register_strategies(cls, strategy_registry: _StrategyRegistry) -> None:
        register_deepspeed_presets(cls, strategy_registry)
