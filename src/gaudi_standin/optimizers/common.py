"""What the stand-in's fused optimizers share: step markers, gradient collection, compute dtypes."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import Tensor
from torch.optim.optimizer import required

#: torch's marker for a required optimizer argument (``FusedSGD``'s ``lr``, as on the bridge).
_REQUIRED: Any = required


def _mark_step() -> None:
    """Mark a step, as the bridge's optimizers do (counted in lazy mode, a no-op in eager mode)."""
    from gaudi_standin.emulator import machine

    machine.current().mark_step()


def _grads_of(params: Iterable[Tensor], optimizer: str) -> list[tuple[Tensor, Tensor]]:
    pairs = []
    for param in params:
        grad = param.grad
        if grad is None:
            continue
        if grad.is_sparse:
            raise RuntimeError(f"{optimizer} does not support sparse gradients; use torch.optim.SparseAdam instead.")
        pairs.append((param, grad))
    return pairs


#: Floating dtype promotion, worked out once at import: ``torch.promote_types`` dispatches as an aten op that
#: returns a Python value, which an HPU graph capture refuses as a host sync. The bridge's fused kernels pick their
#: compute dtype on the device side; this table lets the stand-in's step run inside a capture the same way.
_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_PROMOTED: dict[tuple[torch.dtype, torch.dtype], torch.dtype] = {
    (a, b): torch.promote_types(a, b) for a in _FLOATS for b in _FLOATS
}


def _compute_dtype(param: torch.dtype, moment: torch.dtype) -> torch.dtype:
    """The dtype an update of a ``param`` parameter with ``moment`` moments is computed in (their promotion)."""
    promoted = _PROMOTED.get((param, moment))
    return promoted if promoted is not None else torch.promote_types(param, moment)


def _moment_dtypes(moments_dtype: Any) -> tuple[torch.dtype | None, torch.dtype | None]:
    if moments_dtype is None or isinstance(moments_dtype, torch.dtype):
        dtypes: tuple[Any, Any] = (moments_dtype, moments_dtype)
    else:
        dtypes = tuple(moments_dtype)
    if len(dtypes) != 2 or not all(d is None or (isinstance(d, torch.dtype) and d.is_floating_point) for d in dtypes):
        raise ValueError(
            f"`moments_dtype={moments_dtype!r}` must be a floating dtype or a pair of them (first and second moment)."
        )
    if any(d is not None and d.itemsize == 1 for d in dtypes):
        from gaudi_standin.optimizers import fp8_moments

        if not all(d is None or fp8_moments.is_fp8(d) or d.itemsize > 1 for d in dtypes):
            raise ValueError(f"`moments_dtype={moments_dtype!r}`: fp8 moments are float8_e4m3fn or float8_e5m2.")
        fp8_moments.check_supported(moments_dtype)
    return dtypes[0], dtypes[1]


def _wide(dtype: torch.dtype) -> torch.dtype:
    """The dtype the stand-in computes norms and updates of ``dtype`` tensors in: at least fp32."""
    return _compute_dtype(dtype, torch.float32) if dtype in _FLOATS else torch.float32


def _run_closure(closure: Callable[[], Any] | None) -> Any:
    if closure is None:
        return None
    with torch.enable_grad():
        return closure()
