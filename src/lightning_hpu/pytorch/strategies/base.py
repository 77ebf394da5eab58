"""The base mixin of every HPU Trainer strategy: step markers, HPU checkpoint IO, checks at setup.

Steps are marked as for Fabric (both use :mod:`lightning_hpu.distributed.strategy_parts`: ``mark_step`` and the
checkpoint IO default): after each backward and optimizer step, and before and after each evaluation step. With
``pipeline_forward_backward`` a step is also marked between forward and backward, so the device runs the forward
while the host builds the backward (optimum-habana's ``pipelining_fwd_bwd``; it costs device memory). At setup the
strategy refuses a compiled model in lazy mode, compiles one that the user compiled with torch's default backend
with ``hpu_backend`` instead (:mod:`lightning_hpu.compile.default_backend`), and removes the temporary
files that killed saves left in the checkpoint directories. Mix it in before the Lightning strategy it extends.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import lightning.pytorch as pl
from lightning.fabric.utilities.cloud_io import _is_local_file_protocol
from lightning.pytorch.strategies.strategy import Strategy
from lightning.pytorch.utilities.types import STEP_OUTPUT
from torch import Tensor
from torch.nn import Module
from torch.optim import Optimizer
from typing_extensions import override

from lightning_hpu.checkpoint.files import remove_orphaned_temporary_files
from lightning_hpu.compile.default_backend import COMPILE_KWARGS_KEY, hpu_compile_kwargs
from lightning_hpu.distributed.strategy_parts import HPUCheckpointIOAttribute, between_mark_steps, mark_step

__all__ = ["HPUStrategyHooks", "mark_step"]


class HPUStrategyHooks(Strategy):
    """Trainer strategy mixin: ``mark_step`` placement and :class:`HPUCheckpointIO` by default."""

    #: Mark a step between forward and backward as well (more overlap, more device memory).
    pipeline_forward_backward: bool = False
    checkpoint_io = HPUCheckpointIOAttribute()

    @override
    def setup(self, trainer: pl.Trainer) -> None:
        """Before the run: refuse a compiled model in lazy mode, compile it with ``hpu_backend`` where the user left
        torch's default, and remove the temporary checkpoint files that killed saves left in the checkpoint
        directories."""
        _refuse_compiled_model_in_lazy_mode(trainer)
        recompile_for_hpu(trainer.lightning_module)
        for callback in trainer.checkpoint_callbacks:
            dirpath = getattr(callback, "dirpath", None)
            if dirpath is not None and _is_local_file_protocol(dirpath):
                remove_orphaned_temporary_files(dirpath)
        super().setup(trainer)

    @override
    def training_step(self, *args: Any, **kwargs: Any) -> STEP_OUTPUT:
        output = super().training_step(*args, **kwargs)
        if self.pipeline_forward_backward:
            mark_step()
        return output

    @override
    def backward(self, closure_loss: Tensor, optimizer: Optimizer | None, *args: Any, **kwargs: Any) -> Tensor:
        loss = super().backward(closure_loss, optimizer, *args, **kwargs)
        mark_step()
        return loss

    @override
    def optimizer_step(
        self, optimizer: Optimizer, closure: Callable[[], Any], model: Module | None = None, **kwargs: Any
    ) -> Any:
        output = super().optimizer_step(optimizer, closure, model, **kwargs)
        mark_step()
        return output

    @override
    def validation_step(self, *args: Any, **kwargs: Any) -> STEP_OUTPUT:
        return between_mark_steps(super().validation_step, *args, **kwargs)

    @override
    def test_step(self, *args: Any, **kwargs: Any) -> STEP_OUTPUT:
        return between_mark_steps(super().test_step, *args, **kwargs)

    @override
    def predict_step(self, *args: Any, **kwargs: Any) -> Any:
        return between_mark_steps(super().predict_step, *args, **kwargs)


def _refuse_compiled_model_in_lazy_mode(trainer: pl.Trainer) -> None:
    """``trainer.fit(torch.compile(model))`` in lazy mode stops here, with one sentence, not at the first step."""
    from lightning_hpu.runtime import require_backend
    from lightning_hpu.runtime.compile_backend import CompileInLazyModeError, lazy_mode_refusal

    module = trainer.lightning_module
    if getattr(module, "_compiler_ctx", None) is not None and require_backend().is_lazy():
        raise CompileInLazyModeError(lazy_mode_refusal())


def recompile_for_hpu(module: Any) -> None:
    """Compile a LightningModule that the Trainer got as ``torch.compile(module)`` (``from_compiled``) again with the
    HPU's arguments, where :func:`~lightning_hpu.compile.default_backend.hpu_compile_kwargs` changes them. Called at
    the HPU strategies' ``setup``, before anything ran the compiled methods."""
    import torch
    from lightning.pytorch.utilities import compile as compile_utils

    context = getattr(module, "_compiler_ctx", None)
    kwargs = context.get(COMPILE_KWARGS_KEY) if context else None
    if kwargs is None:  # not compiled, or compiled before Lightning recorded the arguments: nothing to go on
        return
    hpu_kwargs = hpu_compile_kwargs(kwargs, "Trainer")
    if hpu_kwargs != kwargs:
        compile_utils.to_uncompiled(module)
        recompiled = torch.compile(module, **hpu_kwargs)
        assert isinstance(recompiled, torch._dynamo.eval_frame.OptimizedModule)  # a module compiles to one
        compile_utils.from_compiled(recompiled)
