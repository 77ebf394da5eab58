"""HPU autocast's rule for normalization ops, on the stand-in's CPU autocast: the input is lowered, not the weights.

The bridge's autocast lists ``batch_norm``, ``group_norm``, ``instance_norm`` and ``layer_norm`` as "lower first"
ops (``hpu_ops/autocast_helpers.h``): inside an autocast region their input is cast to the low-precision dtype and
their weights are left as they are. CPU autocast has no rule for them, so on the stand-in a norm layer whose input
arrives in fp32 (after a residual add with an fp32 buffer, say) runs on that fp32 input. With weights FSDP's
mixed precision has cast to bf16, the CPU kernel then refuses the mix ("mixed dtype (CPU): expect parameter to have
scalar type of Float"), where a Gaudi runs the layer in bf16. :func:`install` registers the bridge's rule for the
CPU autocast key, so the stand-in computes what the device computes. Tensors on another device (such as a real
``hpu`` device with its own autocast) are not affected.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

#: The bridge's "lower first" autocast ops.
LOWER_FIRST_OPS = ("batch_norm", "group_norm", "instance_norm", "layer_norm")

_library: torch.library.Library | None = None


def _lower_first(op: Callable[..., Any]) -> Callable[..., Any]:
    """An AutocastCPU kernel for ``op``: cast its first argument to the autocast dtype, then call it below autocast."""
    below_autocast = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastCPU)

    def kernel(inp: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        low = torch.get_autocast_dtype("cpu")
        if inp.is_floating_point() and inp.dtype != low and inp.dtype != torch.float64:
            inp = inp.to(low)
        with torch._C._ExcludeDispatchKeyGuard(below_autocast):
            return op(inp, *args, **kwargs)

    return kernel


def install() -> None:
    """Register the rule (once per process); CPU autocast regions lower the input of the four norm ops from then."""
    global _library
    if _library is not None:
        return
    library = torch.library.Library("aten", "IMPL")
    for name in LOWER_FIRST_OPS:
        library.impl(name, _lower_first(getattr(torch.ops.aten, name).default), "AutocastCPU")
    _library = library
