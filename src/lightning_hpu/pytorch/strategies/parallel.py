"""Data-parallel training on several HPUs and nodes: DDP over HCCL, and fast DDP."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any, Literal

import lightning.pytorch as pl
import torch
from lightning.fabric.plugins import CheckpointIO, ClusterEnvironment
from lightning.fabric.plugins.collectives.torch_collective import default_pg_timeout
from lightning.pytorch.overrides.distributed import _register_ddp_comm_hook
from lightning.pytorch.plugins.precision import Precision
from torch.nn import Module
from torch.nn.parallel import DistributedDataParallel
from torch.optim import Optimizer
from typing_extensions import override

from lightning_hpu.distributed.collectives import broadcast_module_states_
from lightning_hpu.distributed.fast_ddp import FastDDPHooks, ReduceDtypeName, chosen_ddp_kwargs
from lightning_hpu.pytorch.strategies.base import HPUStrategyHooks
from lightning_hpu.pytorch.strategies.hccl import HCCLDDPHooks
from lightning_hpu.pytorch.strategies.last_batch import LastBatch, LastBatchHooks, check_last_batch


class HPUParallelStrategy(FastDDPHooks, HPUStrategyHooks, LastBatchHooks, HCCLDDPHooks):
    """One process per HPU, on one or several nodes (``strategy="hpu_parallel"`` or ``"hpu_ddp"``).

    The Trainer picks it for ``accelerator="hpu"`` with ``devices>1`` or ``num_nodes>1``. Gradients are averaged
    over HCCL (gloo on the CPU stand-in) by ``DistributedDataParallel``, or, with ``fast_ddp=True``, by one fused
    all-reduce per optimizer step.

    Args:
        accelerator, parallel_devices, cluster_environment, checkpoint_io, precision_plugin: as Lightning's
            ``DDPStrategy`` (in its order, so they are taken by position too).
        ddp_comm_state, ddp_comm_hook, ddp_comm_wrapper: a DDP communication hook (for example
            ``torch.distributed.algorithms.ddp_comm_hooks.default_hooks.bf16_compress_hook``), registered on HPU too.
        model_averaging_period: period of post-local-SGD model averaging (with a ``PostLocalSGDState``).
        process_group_backend: the ``torch.distributed`` backend; ``"hccl"`` by default.
        timeout: timeout of the process group's collectives.
        start_method: ``"popen"`` (re-run the script once per HPU) or ``"spawn"`` (Python processes that import the
            main module; needs a ``__main__`` guard and picklable arguments). ``"fork"`` and ``"forkserver"`` are
            refused: a forked child cannot use the parent's Habana runtime.
        fast_ddp: do not wrap the model in ``DistributedDataParallel``; instead, right before each optimizer step
            (after the last backward of a gradient-accumulation cycle, before clipping), average all gradients with
            one all-reduce of a flat, pre-scaled buffer per dtype, allocated once (see
            :mod:`lightning_hpu.distributed.flat_gradients`). Fewer, larger collectives and no per-bucket hooks;
            every trainable parameter gets a gradient (zeros where unused). The DDP keyword arguments and
            communication hooks do not apply and are refused when given.
        reduce_dtype: with ``fast_ddp``, the dtype gradients travel in: ``torch.bfloat16`` (or ``"bfloat16"``)
            halves the bytes sent (as optimum-habana's fast DDP does), the result is cast back. ``None``: the
            gradients' own dtype.
        bucket_cap_mb: ``DistributedDataParallel``'s bucket size; ``None``: 230 on HPU, as optimum-habana sets it
            (larger buckets mean fewer all-reduces).
        gradient_as_bucket_view: gradients as views into DDP's buckets (fewer device copies, less memory);
            ``None``: ``True`` on HPU.
        static_graph, find_unused_parameters, broadcast_buffers: ``DistributedDataParallel``'s (``None``: DDP's
            default; ``find_unused_parameters=True`` costs a graph traversal each step).
        pipeline_forward_backward: also mark a step between forward and backward (see ``SingleHPUStrategy``).
        last_batch: ``"warn"``, ``"pad"``, ``"drop"`` or ``"keep"`` a ragged last training batch, on each process
            (see ``SingleHPUStrategy``).
        **kwargs: further ``DistributedDataParallel`` keyword arguments (``init_sync``, ``process_group``, ...), as
            given (Python only: a config file takes the arguments above).
    """

    def __init__(
        self,
        accelerator: pl.accelerators.Accelerator | None = None,
        parallel_devices: list[torch.device] | None = None,
        cluster_environment: ClusterEnvironment | None = None,
        checkpoint_io: CheckpointIO | None = None,
        precision_plugin: Precision | None = None,
        ddp_comm_state: object | None = None,
        ddp_comm_hook: Callable[..., Any] | None = None,
        ddp_comm_wrapper: Callable[..., Any] | None = None,
        model_averaging_period: int | None = None,
        process_group_backend: str | None = None,
        timeout: timedelta | None = default_pg_timeout,
        start_method: Literal["popen", "spawn"] = "popen",
        *,
        fast_ddp: bool = False,
        reduce_dtype: torch.dtype | ReduceDtypeName | None = None,
        bucket_cap_mb: int | None = None,
        gradient_as_bucket_view: bool | None = None,
        static_graph: bool | None = None,
        find_unused_parameters: bool | None = None,
        broadcast_buffers: bool | None = None,
        pipeline_forward_backward: bool = False,
        last_batch: LastBatch = "warn",
        **kwargs: Any,
    ) -> None:
        self.last_batch = check_last_batch(last_batch)
        declared = {
            "bucket_cap_mb": bucket_cap_mb,
            "gradient_as_bucket_view": gradient_as_bucket_view,
            "static_graph": static_graph,
            "find_unused_parameters": find_unused_parameters,
            "broadcast_buffers": broadcast_buffers,
        }
        super().__init__(
            fast_ddp=fast_ddp,
            reduce_dtype=reduce_dtype,
            pipeline_forward_backward=pipeline_forward_backward,
            ddp_kwargs=chosen_ddp_kwargs(type(self).__name__, declared, kwargs),
            accelerator=accelerator,
            parallel_devices=parallel_devices,
            cluster_environment=cluster_environment,
            checkpoint_io=checkpoint_io,
            precision_plugin=precision_plugin,
            ddp_comm_state=ddp_comm_state,
            ddp_comm_hook=ddp_comm_hook,
            ddp_comm_wrapper=ddp_comm_wrapper,
            model_averaging_period=model_averaging_period,
            process_group_backend=process_group_backend,
            timeout=timeout,
            start_method=start_method,
        )

    @override
    def configure_ddp(self) -> None:
        """Wrap the model in ``DistributedDataParallel``; with ``fast_ddp``, only copy rank 0's weights everywhere."""
        if not self.fast_ddp:
            super().configure_ddp()
            return
        assert self.model is not None
        broadcast_module_states_(self.model, src=0)

    @override
    def _register_ddp_hooks(self) -> None:
        # Lightning registers communication hooks on CUDA only; HCCL runs them as well.
        if self._ddp_comm_hook is None and self._ddp_comm_wrapper is None:
            return
        assert isinstance(self.model, DistributedDataParallel)
        _register_ddp_comm_hook(
            model=self.model,
            ddp_comm_state=self._ddp_comm_state,
            ddp_comm_hook=self._ddp_comm_hook,
            ddp_comm_wrapper=self._ddp_comm_wrapper,
        )

    @override
    def optimizer_step(
        self, optimizer: Optimizer, closure: Callable[[], Any], model: Module | None = None, **kwargs: Any
    ) -> Any:
        if self.fast_ddp:
            closure = self._reduce_after(closure, optimizer)
        return super().optimizer_step(optimizer, closure, model, **kwargs)

    def _reduce_after(self, closure: Callable[[], Any], optimizer: Optimizer) -> Callable[[], Any]:
        """The closure, then one gradient all-reduce: it runs before the precision plugin clips and steps."""

        def closure_then_reduce() -> Any:
            output = closure()
            self._fast_gradients.reduce(optimizer)
            return output

        return closure_then_reduce
