"""What every HPU strategy (Trainer and Fabric) does around the steps: ``mark_step`` placement and checkpoint IO.

In lazy mode the HPU accumulates ops into a graph and runs it at ``mark_step``. The strategies mark a step after
each backward (the graph of forward + backward runs while the host prepares the optimizer step), after each
optimizer step, and (Trainer) before and after each evaluation step. With ``pipeline_forward_backward``
(optimum-habana's ``pipelining_fwd_bwd``) a step is also marked between forward and backward: the device runs the
forward while the host builds the backward, at the cost of device memory. In eager mode, the default of current Gaudi
software (``PT_HPU_LAZY_MODE`` unset or ``0``), every ``mark_step`` is a no-op. Checkpoints go through
:class:`~lightning_hpu.HPUCheckpointIO` (host copies, atomic writes) unless another IO is given. Mix these classes
in before the Lightning strategy they extend. What the Trainer's strategies use too (``mark_step``, the checkpoint IO
attribute, the precision plugin attribute) is below both trees, in :mod:`lightning_hpu.distributed.strategy_parts`.
"""

from __future__ import annotations

from typing import Any

from lightning.fabric.strategies.strategy import Strategy
from lightning.fabric.utilities.types import Optimizable
from torch import Tensor
from torch.nn import Module
from torch.optim import Optimizer
from typing_extensions import override

from lightning_hpu.device.fused_optimizers import clip_grad_norm
from lightning_hpu.distributed.strategy_parts import HPUCheckpointIOAttribute, mark_step


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
