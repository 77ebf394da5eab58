"""What every HPU strategy (Trainer and Fabric) does around the steps: ``mark_step`` placement and checkpoint IO.

In lazy mode the HPU accumulates ops into a graph and runs it at ``mark_step``. The strategies mark a step after
each backward (the graph of forward + backward runs while the host prepares the optimizer step), after each
optimizer step, and (Trainer) before and after each evaluation step. With ``pipeline_forward_backward``
(optimum-habana's ``pipelining_fwd_bwd``) a step is also marked between forward and backward: the device runs the
forward while the host builds the backward, at the cost of device memory. In eager mode, the default of current Gaudi
software (``PT_HPU_LAZY_MODE`` unset or ``0``), every ``mark_step`` is a no-op. Checkpoints go through
:class:`~lightning_hpu.HPUCheckpointIO` (host copies, atomic writes) unless another IO is given. Mix these classes
in before the Lightning strategy they extend. :class:`HPUCheckpointIOAttribute` and :class:`PrecisionOfType` serve the
Trainer's strategies too (:mod:`lightning_hpu.pytorch.strategies.base`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from lightning.fabric.plugins.io.checkpoint_io import CheckpointIO
from lightning.fabric.strategies.strategy import Strategy
from lightning.fabric.utilities.types import Optimizable
from torch import Tensor
from torch.nn import Module
from torch.optim import Optimizer
from typing_extensions import override

from lightning_hpu.device.fused_optimizers import clip_grad_norm
from lightning_hpu.fabric.plugins.checkpoint_io import HPUCheckpointIO
from lightning_hpu.runtime import require_backend

_T = TypeVar("_T")
_P = TypeVar("_P")


def mark_step() -> None:
    """Flush the lazy graph of the active backend (a no-op in eager mode)."""
    require_backend().mark_step()


def between_mark_steps(step: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
    """Run a step as a graph of its own: a step is marked before and after it."""
    mark_step()
    output = step(*args, **kwargs)
    mark_step()
    return output


def with_hpu_checkpoint_io(io: CheckpointIO | None) -> CheckpointIO:
    """``io``, with :class:`HPUCheckpointIO` where it is missing: as the default, and inside a wrapper (an IO with a
    ``checkpoint_io`` attribute, such as the Trainer's ``AsyncCheckpointIO()``) that was given no IO to wrap."""
    if io is None:
        return HPUCheckpointIO()
    if getattr(io, "checkpoint_io", HPUCheckpointIO) is None:
        io.checkpoint_io = HPUCheckpointIO()  # type: ignore[attr-defined]  # a wrapper, as checked
    return io


class HPUCheckpointIOAttribute:
    """A strategy's ``checkpoint_io`` (Trainer and Fabric): the IO set, with :func:`with_hpu_checkpoint_io`'s
    :class:`HPUCheckpointIO` where it is missing. Written once, in place of Lightning's property."""

    def __get__(self, strategy: Any, strategy_class: type | None = None) -> CheckpointIO:
        strategy._checkpoint_io = with_hpu_checkpoint_io(strategy._checkpoint_io)
        io: CheckpointIO = strategy._checkpoint_io
        return io

    def __set__(self, strategy: Any, io: CheckpointIO | None) -> None:
        strategy._checkpoint_io = io


class PrecisionOfType(Generic[_P]):
    """A strategy's precision plugin attribute (``precision`` in Fabric, ``precision_plugin`` in the Trainer) that
    holds only ``plugin_type``: ``plugin_type("32-true")`` until one is set, and a clear error for another type.

    Written once for both sides' strategies whose precision must be their own (FSDP's mixed precision), in place of
    Lightning's property, which would accept any plugin of its base type.
    """

    def __init__(self, plugin_type: type[_P], owner: str) -> None:
        self.plugin_type = plugin_type
        self.owner = owner  # "Trainer" or "Fabric": what the error message tells the user to pass
        self.name = ""
        self.strategy_class = ""

    def __set_name__(self, strategy_class: type, name: str) -> None:
        self.name, self.strategy_class = name, strategy_class.__name__

    def __get__(self, strategy: Any, strategy_class: type | None = None) -> _P:
        plugin = getattr(strategy, f"_{self.name}")
        if plugin is None:
            plugin = self.plugin_type("32-true")  # type: ignore[call-arg]  # every HPU precision plugin takes it
            setattr(strategy, f"_{self.name}", plugin)
        if not isinstance(plugin, self.plugin_type):
            raise TypeError(f"{self._needs()}, got {type(plugin).__name__}.")
        return plugin

    def __set__(self, strategy: Any, plugin: object) -> None:
        if plugin is not None and not isinstance(plugin, self.plugin_type):
            raise TypeError(
                f"{self._needs()}, got {type(plugin).__name__}; pass {self.owner}(precision=...) or"
                f" plugins=[{self.plugin_type.__name__}(...)]."
            )
        setattr(strategy, f"_{self.name}", plugin)

    def _needs(self) -> str:
        return f"{self.strategy_class} needs an {self.plugin_type.__name__}"


class FabricHPUStrategyHooks(Strategy):
    """Fabric strategy mixin: ``mark_step`` after backward and optimizer step, :class:`HPUCheckpointIO`."""

    #: Mark a step before backward as well, i.e. between forward and backward (more overlap, more device memory).
    pipeline_forward_backward: bool = False
    checkpoint_io = HPUCheckpointIOAttribute()

    @override
    def backward(self, tensor: Tensor, module: Module | None, *args: Any, **kwargs: Any) -> None:
        if self.pipeline_forward_backward:
            mark_step()
        super().backward(tensor, module, *args, **kwargs)
        mark_step()

    @override
    def optimizer_step(self, optimizer: Optimizable, **kwargs: Any) -> Any:
        output = super().optimizer_step(optimizer, **kwargs)
        mark_step()
        return output


class FabricFusedClipHooks(Strategy):
    """Fabric strategy mixin for data-parallel and single-device strategies (whose gradients are whole on each
    device): ``fabric.clip_gradients(max_norm=...)`` uses the device's fused clip when the precision plugin's
    ``fused_clip_norm`` is on and the norm is the 2-norm. Both clips first let the strategy complete the gradients
    (:meth:`_complete_gradients`: fast DDP averages them there)."""

    def _complete_gradients(self, optimizer: Optimizer) -> None:
        """Make ``optimizer``'s gradients whole before they are clipped (nothing to do by default)."""

    @override
    def clip_gradients_value(self, module: Module, optimizer: Optimizer, clip_val: float | int) -> None:
        self._complete_gradients(optimizer)
        super().clip_gradients_value(module, optimizer, clip_val)

    @override
    def clip_gradients_norm(
        self,
        module: Module,
        optimizer: Optimizer,
        max_norm: float | int,
        norm_type: float | int = 2.0,
        error_if_nonfinite: bool = True,
    ) -> Tensor:
        self._complete_gradients(optimizer)
        if not getattr(self.precision, "fused_clip_norm", False) or float(norm_type) != 2.0:
            return super().clip_gradients_norm(module, optimizer, max_norm, norm_type, error_if_nonfinite)
        self.precision.unscale_gradients(optimizer)
        total = clip_grad_norm(self.precision.main_params(optimizer), float(max_norm))
        if error_if_nonfinite and not bool(total.isfinite()):
            raise RuntimeError(
                f"The total norm of the gradients is {total.item()}; pass `error_if_nonfinite=False` to clip anyway."
            )
        return total
