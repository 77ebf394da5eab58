"""``FusedAdamW``'s fp8 moments (``moments_dtype=(torch.float8_e4m3fn, torch.float8_e5m2)`` and the like).

The bridge's ``optimizer_adamw`` kernel (``hpu_ops/backend/optimizer_adamw_gen.cpp``) keeps a moment stored in an fp8
dtype together with a per-tensor scale (the optimizer state's ``exp_avg_scale``/``exp_avg_sq_scale``, created as
``[1]`` in the parameter's dtype). At each step it dequantizes the stored moment with its scale, updates it in the
parameter's dtype and uses that unrounded value for the weight update; then it stores it again with a new scale: the
power of two ``2 ** floor(log2(fp8_max / amax))`` that brings the moment's largest magnitude ``amax`` closest to the
format's largest value without passing it (240 for ``float8_e4m3fn`` on a Gaudi, 57344 for ``float8_e5m2``).

The stand-in computes the same with torch's fp8 dtypes. Two choices are its own, and said here: the kernel's cast
rounds stochastically, the stand-in rounds to nearest (as its fp8 casts do, :mod:`gaudi_standin.ops.fp8`); and a
moment that is all zeros (no largest magnitude to scale by) keeps its previous scale. Everything is tensor ops on
the moment's device, so a step still runs inside an HPU graph capture. An emulated first-generation Gaudi has no
fp8, and refuses fp8 moments, as its fp8 refuses everything else.
"""

from __future__ import annotations

import torch
from torch import Tensor

#: The largest finite value of each fp8 format on a Gaudi (the kernel's constants).
FP8_MAX = {torch.float8_e4m3fn: 240.0, torch.float8_e5m2: 57344.0}


def is_fp8(dtype: torch.dtype | None) -> bool:
    return dtype in FP8_MAX


def check_supported(moments_dtype: object) -> None:
    """Refuse fp8 moments on an emulated first-generation Gaudi, which has no fp8."""
    from gaudi_standin.emulator import machine

    if machine.current().device_name() == "GAUDI":
        raise RuntimeError(
            f"`moments_dtype={moments_dtype!r}`: fp8 needs a Gaudi2 or later, and the emulated device is a GAUDI"
            " (LIGHTNING_HPU_CPU_DEVICE_NAME); use torch.bfloat16 or torch.float32 moments."
        )


def new_scale(param: Tensor) -> Tensor:
    """The initial scale of an fp8 moment of ``param``: ``[1]`` in its dtype, on its device."""
    return torch.ones(1, dtype=param.dtype, device=param.device)


def load(moment: Tensor, scale: Tensor, dtype: torch.dtype) -> Tensor:
    """The stored fp8 ``moment`` dequantized with ``scale``, in ``dtype``."""
    return moment.to(dtype) / scale.to(dtype)


def store(value: Tensor, moment: Tensor, scale: Tensor) -> None:
    """Write ``value`` into the fp8 ``moment`` with a fresh power-of-two scale, updating ``scale`` in place."""
    limit = FP8_MAX[moment.dtype]
    amax = value.abs().amax().to(scale.dtype)
    candidate = torch.exp2(torch.floor(torch.log2(limit / amax)))
    scale.copy_(torch.where(torch.isfinite(candidate) & (candidate > 0), candidate, scale))
    scaled = (value.float() * scale.float()).clamp(-limit, limit)
    moment.copy_(scaled.to(moment.dtype))
