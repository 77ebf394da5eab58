"""The bridge's ``FusedClipNorm`` on the stand-in: gradients scaled in place to a 2-norm of at most ``max_norm``."""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import Tensor

from gaudi_standin.optimizers.common import (
    _mark_step,
)


class FusedClipNorm:
    """The bridge's ``FusedClipNorm``: ``FusedClipNorm(parameters, max_norm).clip_norm(parameters)`` (2-norm)."""

    def __init__(self, parameters: Iterable[Tensor], max_norm: float) -> None:
        params = list(parameters)
        # The bridge keeps the bound in the dtype of the first parameter.
        self.dtype = params[0].dtype if params else torch.float32
        # ... on the HPU (the bridge's ``torch.device("hpu")``: the current one), whatever device the parameters are on
        # when the clipper is made (a script may make it before moving the model).
        self.device = torch.device("hpu")
        bound = max_norm if isinstance(max_norm, Tensor) else torch.tensor(float(max_norm))
        self.max_norm_t = bound.to(self.dtype).to(self.device)
        self.norm_type = 2.0

    @torch.no_grad()
    def clip_norm(self, parameters: Iterable[Tensor] | Tensor) -> Tensor:
        """Scale the gradients in place to a total 2-norm of at most ``max_norm``; return the norm before."""
        _mark_step()
        params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
        grads = [param.grad for param in params if param.grad is not None]
        if not grads:
            return torch.zeros((), device=self.device)
        total = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g.float()) for g in grads]))
        scale = torch.clamp(self.max_norm_t.float() / (total + 1e-6), max=1.0)
        for grad in grads:
            grad.mul_(scale.to(grad.dtype))
        _mark_step()
        return total.to(self.dtype)


@torch.no_grad()
def fused_norm(grad: list[Tensor], max_norm: Tensor, norm_type: float) -> Tensor:
    """The bridge's ``_hpex_C.fused_norm``: scale ``grad`` in place to a total 2-norm of at most ``max_norm``.

    Returns the total norm before clipping, shape ``[1]`` in the gradients' dtype. As the bridge's kernel, only the
    2-norm is supported (``norm_type=2.0``, what ``FusedClipNorm`` passes).
    """
    if float(norm_type) != 2.0:
        raise RuntimeError(f"unsupported norm_type for fused norm: {norm_type} (only 2.0 is supported)")
    total = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g.float()) for g in grad]))
    scale = torch.clamp(max_norm.float().reshape(()) / (total + 1e-6), max=1.0)
    for g in grad:
        g.mul_(scale.to(g.dtype))
    return total.reshape(1).to(grad[0].dtype)
