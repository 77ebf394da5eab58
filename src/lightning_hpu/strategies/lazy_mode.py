"""Where ``mark_step`` goes, written once for every HPU strategy (Trainer and Fabric).

In lazy mode the HPU accumulates ops into a graph and runs it at ``mark_step``. The strategies mark a step after
each backward (the graph of forward + backward runs while the host prepares the optimizer step), after each
optimizer step, and before and after each evaluation step. With ``pipeline_forward_backward`` they also mark one
between forward and backward, so the device runs the forward while the host builds the backward (optimum-habana's
``pipelining_fwd_bwd``; it costs device memory). In eager mode, the default of current Gaudi software
(``PT_HPU_LAZY_MODE`` unset or ``0``), every ``mark_step`` is a no-op. Mix these classes in before the Lightning
strategy they extend.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import lightning.pytorch as pl
from lightning.fabric.plugins.io.checkpoint_io import CheckpointIO
from lightning.fabric.strategies.strategy import Strategy as FabricStrategy
from lightning.fabric.utilities.cloud_io import _is_local_file_protocol
from lightning.fabric.utilities.types import Optimizable
from lightning.pytorch.plugins.io.wrapper import _WrappingCheckpointIO
from lightning.pytorch.strategies.strategy import Strategy
from lightning.pytorch.utilities.types import STEP_OUTPUT
from torch import Tensor
from torch.nn import Module
from torch.optim import Optimizer
from typing_extensions import override

from lightning_hpu.plugins.checkpoint_io import HPUCheckpointIO
from lightning_hpu.plugins.temp_files import remove_orphaned_temporary_files
from lightning_hpu.runtime import require_backend

_T = TypeVar("_T")


def mark_step() -> None:
    """Flush the lazy graph of the active backend (a no-op in eager mode)."""
    require_backend().mark_step()


def _between_mark_steps(step: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
    """Run an evaluation step as a graph of its own: a step is marked before and after it."""
    mark_step()
    output = step(*args, **kwargs)
    mark_step()
    return output


class HPUStrategyHooks(Strategy):
    """Trainer strategy mixin: ``mark_step`` placement and :class:`HPUCheckpointIO` by default."""

    #: Mark a step between forward and backward as well (more overlap, more device memory).
    pipeline_forward_backward: bool = False

    @property
    @override
    def checkpoint_io(self) -> CheckpointIO:
        self._checkpoint_io = _with_hpu_checkpoint_io(self._checkpoint_io)
        return self._checkpoint_io

    @checkpoint_io.setter
    def checkpoint_io(self, io: CheckpointIO | None) -> None:
        self._checkpoint_io = io

    @override
    def setup(self, trainer: pl.Trainer) -> None:
        """Before the run: refuse a compiled model in lazy mode, and remove the temporary checkpoint files that killed
        saves left in the checkpoint directories."""
        _refuse_compiled_model_in_lazy_mode(trainer)
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
        return _between_mark_steps(super().validation_step, *args, **kwargs)

    @override
    def test_step(self, *args: Any, **kwargs: Any) -> STEP_OUTPUT:
        return _between_mark_steps(super().test_step, *args, **kwargs)

    @override
    def predict_step(self, *args: Any, **kwargs: Any) -> Any:
        return _between_mark_steps(super().predict_step, *args, **kwargs)


class FabricHPUStrategyHooks(FabricStrategy):
    """Fabric strategy mixin: ``mark_step`` after backward and optimizer step, :class:`HPUCheckpointIO`."""

    @property
    @override
    def checkpoint_io(self) -> CheckpointIO:
        self._checkpoint_io = _with_hpu_checkpoint_io(self._checkpoint_io)
        return self._checkpoint_io

    @checkpoint_io.setter
    def checkpoint_io(self, io: CheckpointIO | None) -> None:
        self._checkpoint_io = io

    @override
    def backward(self, tensor: Tensor, module: Module | None, *args: Any, **kwargs: Any) -> None:
        super().backward(tensor, module, *args, **kwargs)
        mark_step()

    @override
    def optimizer_step(self, optimizer: Optimizable, **kwargs: Any) -> Any:
        output = super().optimizer_step(optimizer, **kwargs)
        mark_step()
        return output


def _with_hpu_checkpoint_io(io: CheckpointIO | None) -> CheckpointIO:
    """``io``, with :class:`HPUCheckpointIO` where it is missing: as the default, and inside a wrapper such as
    Lightning's ``AsyncCheckpointIO()`` that was given no IO to wrap."""
    if io is None:
        return HPUCheckpointIO()
    if isinstance(io, _WrappingCheckpointIO) and io.checkpoint_io is None:
        io.checkpoint_io = HPUCheckpointIO()
    return io


def _refuse_compiled_model_in_lazy_mode(trainer: pl.Trainer) -> None:
    """``trainer.fit(torch.compile(model))`` in lazy mode stops here, with one sentence, not at the first step."""
    from lightning_hpu.runtime import require_backend
    from lightning_hpu.runtime.compile_backend import CompileInLazyModeError, lazy_mode_refusal

    module = trainer.lightning_module
    if getattr(module, "_compiler_ctx", None) is not None and require_backend().is_lazy():
        raise CompileInLazyModeError(lazy_mode_refusal())
