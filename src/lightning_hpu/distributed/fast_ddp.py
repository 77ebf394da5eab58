"""Fast DDP, written once for the Trainer's and Fabric's ``HPUParallelStrategy(fast_ddp=True)``.

The model is not wrapped in ``DistributedDataParallel``: rank 0's weights are copied everywhere once, and before each
optimizer step the gradients are averaged with one pre-scaled all-reduce per dtype of flat buffers allocated once
(:mod:`lightning_hpu.distributed.flat_gradients`), optionally sent as ``reduce_dtype``.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Mapping
from typing import Any, Literal

import torch
from torch.nn.parallel import DistributedDataParallel
from torch.optim import Optimizer
from typing_extensions import override

from lightning_hpu.distributed.flat_gradients import OptimizerGradients, all_reduce_gradients_, check_reduce_dtype
from lightning_hpu.distributed.hccl import with_gaudi_ddp_defaults
from lightning_hpu.distributed.start_methods import check_start_method
from lightning_hpu.distributed.strategy_methods import StrategyMethods

#: ``reduce_dtype`` by name, as a LightningCLI file gives it (``reduce_dtype: bfloat16``).
ReduceDtypeName = Literal["bfloat16", "float32"]


def as_reduce_dtype(reduce_dtype: torch.dtype | str | None) -> torch.dtype | None:
    """``reduce_dtype`` as a torch dtype: a name (``"bfloat16"``, from a config file) is looked up in ``torch``."""
    if isinstance(reduce_dtype, str):
        dtype = getattr(torch, reduce_dtype, None)
        if not isinstance(dtype, torch.dtype):
            raise ValueError(f"reduce_dtype={reduce_dtype!r} is not a torch dtype; use 'bfloat16', 'float32' or None.")
        return dtype
    return reduce_dtype


@functools.cache
def _ddp_keywords() -> frozenset[str]:
    """The keyword arguments ``DistributedDataParallel`` takes besides those Lightning passes itself."""
    parameters = inspect.signature(DistributedDataParallel.__init__).parameters
    return frozenset(parameters) - {"self", "module", "device_ids"}


def chosen_ddp_kwargs(strategy: str, declared: Mapping[str, Any], others: Mapping[str, Any]) -> dict[str, Any]:
    """The ``DistributedDataParallel`` keywords the user chose, by name.

    ``declared`` are the ones ``strategy``'s signature names (``bucket_cap_mb``, ...), where ``None`` means not chosen
    (the Gaudi default, else DDP's): so LightningCLI, which passes every parameter it sees with its default, chooses
    none of them. ``others`` are ``strategy``'s ``**kwargs``, passed on as given; a name DDP does not take is refused
    here, before any work starts.
    """
    unknown = sorted(set(others) - _ddp_keywords())
    if unknown:
        raise TypeError(
            f"{strategy}({unknown[0]}=...): {unknown[0]!r} is an argument neither of {strategy} nor of torch's"
            " DistributedDataParallel; check its spelling against their signatures."
        )
    return {**{name: value for name, value in declared.items() if value is not None}, **others}


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
    buffers they release at teardown, and the names they register. Mix it in first.

    Each ``HPUParallelStrategy`` declares every argument it takes in its own signature (so ``help()``, editors and
    LightningCLI see them) and hands them here by kind: the fast-DDP options, the ``DistributedDataParallel`` keywords
    the user chose (:func:`chosen_ddp_kwargs`) and Lightning's ``DDPStrategy`` arguments, passed on as given.
    """

    strategy_name = "hpu_parallel"

    #: The Trainer's ``DDPStrategy`` arguments that only the ``DistributedDataParallel`` wrapper uses.
    _WRAPPER_ONLY = ("ddp_comm_hook", "ddp_comm_wrapper", "model_averaging_period")

    def __init__(
        self,
        *,
        fast_ddp: bool,
        reduce_dtype: torch.dtype | str | None,
        pipeline_forward_backward: bool,
        ddp_kwargs: Mapping[str, Any],
        start_method: str,
        **lightning_kwargs: Any,
    ) -> None:
        """``ddp_kwargs`` are the ``DistributedDataParallel`` keywords chosen; ``lightning_kwargs`` Lightning's
        ``DDPStrategy`` arguments, checked against the fast-DDP options first."""
        check_start_method(start_method, type(self).__name__)
        dtype = as_reduce_dtype(reduce_dtype)
        wrapper_only = {name: lightning_kwargs[name] for name in self._WRAPPER_ONLY if name in lightning_kwargs}
        kwargs = {**lightning_kwargs, **ddp_arguments(fast_ddp, dtype, ddp_kwargs, wrapper_only)}
        super().__init__(start_method=start_method, **kwargs)
        self.fast_ddp = fast_ddp
        self.reduce_dtype = dtype
        self.pipeline_forward_backward = pipeline_forward_backward
        self._fast_gradients = FastDDPGradients(dtype)

    @override
    def teardown(self) -> None:
        self._fast_gradients.clear()
        super().teardown()

    @classmethod
    @override
    def register_strategies(cls, strategy_registry: Any) -> None:
        register_parallel_names(cls, strategy_registry)
