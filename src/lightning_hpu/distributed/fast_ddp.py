"""Fast DDP, written once for the Trainer's and Fabric's ``HPUParallelStrategy(fast_ddp=True)``.

The model is not wrapped in ``DistributedDataParallel``: rank 0's weights are copied everywhere once, and before each
optimizer step the gradients are averaged with one pre-scaled all-reduce per dtype of flat buffers allocated once
(:mod:`lightning_hpu.distributed.flat_gradients`), optionally sent as ``reduce_dtype``.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

import torch
from torch.optim import Optimizer
from typing_extensions import override

from lightning_hpu.distributed.flat_gradients import OptimizerGradients, all_reduce_gradients_, check_reduce_dtype
from lightning_hpu.distributed.hccl import with_gaudi_ddp_defaults
from lightning_hpu.distributed.start_methods import check_start_method
from lightning_hpu.distributed.strategy_methods import StrategyMethods


def ddp_arguments(
    fast_ddp: bool,
    reduce_dtype: torch.dtype | None,
    ddp_kwargs: Mapping[str, Any],
    wrapper_only: Mapping[str, object] | None = None,
) -> dict[str, Any]:
    """Check the DDP and fast DDP arguments together; the ``DistributedDataParallel`` arguments to pass on.

    ``wrapper_only`` are further arguments (the Trainer's communication hooks) that only the DDP wrapper uses: like
    ``ddp_kwargs``, fast DDP refuses them when given. Without fast DDP the Gaudi defaults are added.
    """
    check_reduce_dtype(reduce_dtype)
    if reduce_dtype is not None and not fast_ddp:
        raise ValueError(
            "HPUParallelStrategy(reduce_dtype=...) applies to fast_ddp=True only; pass fast_ddp=True, or for DDP"
            " use ddp_comm_hook=default_hooks.bf16_compress_hook."
        )
    if not fast_ddp:
        return with_gaudi_ddp_defaults(ddp_kwargs)
    given = wrapper_only or {}
    ignored = [*ddp_kwargs, *(name for name, value in given.items() if value is not None)]
    if ignored:
        raise ValueError(
            f"HPUParallelStrategy(fast_ddp=True) does not use DistributedDataParallel, so {', '.join(ignored)} would"
            " have no effect; remove them or set fast_ddp=False."
        )
    return dict(ddp_kwargs)


class FastDDPGradients:
    """The gradients fast DDP averages: flat buffers per optimizer (kept across steps) and whether any are pending."""

    def __init__(self, reduce_dtype: torch.dtype | None = None) -> None:
        self.reduce_dtype = reduce_dtype
        self._buffers = OptimizerGradients(reduce_dtype)
        #: Whether a backward ran since the gradients were last averaged.
        self.pending = False

    def reduce(self, optimizer: Optimizer) -> None:
        """Average the gradients of ``optimizer``'s parameters over all processes now (one all-reduce per dtype)."""
        all_reduce_gradients_(self._buffers.of(optimizer))
        self.pending = False

    def clear(self) -> None:
        """Release the buffers (at teardown)."""
        self._buffers.clear()
        self.pending = False


def register_parallel_names(strategy_cls: type, strategy_registry: Any) -> None:
    """Register an ``HPUParallelStrategy`` (Trainer or Fabric) as ``hpu_parallel``, ``hpu_ddp`` and ``hpu_fast_ddp``."""
    name = strategy_cls.strategy_name  # type: ignore[attr-defined]
    description = f"{strategy_cls.__name__}: DDP over HCCL on several HPUs and nodes"
    strategy_registry.register(name, strategy_cls, description=description)
    strategy_registry.register("hpu_ddp", strategy_cls, description=description)
    fast = f"{strategy_cls.__name__}: one fused gradient all-reduce per step"
    strategy_registry.register("hpu_fast_ddp", strategy_cls, description=fast, fast_ddp=True)


class FastDDPHooks(StrategyMethods):
    """What both ``HPUParallelStrategy`` classes (Trainer and Fabric) keep of their options, the fast-DDP gradient
    buffers they release at teardown, and the names they register. Mix it in first."""

    strategy_name = "hpu_parallel"

    #: The Trainer's ``DDPStrategy`` arguments that only the ``DistributedDataParallel`` wrapper uses.
    _WRAPPER_ONLY = ("ddp_comm_hook", "ddp_comm_wrapper", "model_averaging_period")

    def __init__(
        self,
        *args: Any,
        fast_ddp: bool = False,
        reduce_dtype: torch.dtype | None = None,
        start_method: str = "popen",
        pipeline_forward_backward: bool = False,
        **kwargs: Any,
    ) -> None:
        """Lightning's ``DDPStrategy`` takes its own arguments as given; keywords it does not name are
        ``DistributedDataParallel``'s, checked against the fast-DDP options first."""
        check_start_method(start_method, type(self).__name__)
        lightning_names = {
            name
            for name, parameter in inspect.signature(super().__init__).parameters.items()
            if parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY)
        }
        own = {name: value for name, value in kwargs.items() if name in lightning_names}
        wrapper_only = {name: own[name] for name in self._WRAPPER_ONLY if name in own}
        ddp_kwargs = {name: value for name, value in kwargs.items() if name not in lightning_names}
        kwargs = {**own, **ddp_arguments(fast_ddp, reduce_dtype, ddp_kwargs, wrapper_only)}
        super().__init__(*args, start_method=start_method, **kwargs)
        self.fast_ddp = fast_ddp
        self.reduce_dtype = reduce_dtype
        self.pipeline_forward_backward = pipeline_forward_backward
        self._fast_gradients = FastDDPGradients(reduce_dtype)

    @override
    def teardown(self) -> None:
        self._fast_gradients.clear()
        super().teardown()

    @classmethod
    @override
    def register_strategies(cls, strategy_registry: Any) -> None:
        register_parallel_names(cls, strategy_registry)
