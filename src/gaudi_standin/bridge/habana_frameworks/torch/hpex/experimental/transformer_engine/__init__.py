"""``habana_frameworks.torch.hpex.experimental.transformer_engine`` on the stand-in: Intel's fp8 engine, emulated.

``Linear`` is a drop-in for ``nn.Linear``. Outside an enabled :func:`fp8_autocast` it computes ``F.linear``. Inside
one, the input and the weight are quantized to the recipe's forward fp8 format, the gradient of the output to its
backward format (``HYBRID``: E4M3 forward, E5M2 backward), each with its delayed scale; both matmuls of the backward
and the one of the forward run on the dequantized values in fp32, and the output comes back in the activation
dtype (the autocast dtype inside ``torch.autocast``). See :mod:`.fp8` for the scaling and the quantization.

What the stand-in does not emulate: tensor parallelism of ``Linear`` (``tp_size > 1``, ``parallel_mode``), the
engine's attention and checkpoint helpers, and stochastic rounding of gradients (the stand-in rounds to nearest).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from gaudi_standin.bridge.habana_frameworks.torch.hpex.experimental.transformer_engine import fp8, recipe
from gaudi_standin.bridge.habana_frameworks.torch.hpex.experimental.transformer_engine.fp8 import (
    ScalingState,
    dequantize,
    fp8_autocast,
    quantize,
)
from gaudi_standin.emulator import machine

__all__ = ["Linear", "fp8", "fp8_autocast", "recipe"]

#: The engine initialises its weights with normal(0, 0.023).
_INIT_STD = 0.023


def _matmul_dtype(x: Tensor, weight: Tensor) -> torch.dtype:
    """The dtype the layer's output is in: the autocast dtype inside autocast, else the input's, or for an integer
    input the weight's (the bridge's tests feed fp8 layers integer tensors and differentiate the outputs)."""
    device_type = x.device.type
    if torch.is_autocast_enabled(device_type):
        return torch.get_autocast_dtype(device_type)
    return x.dtype if x.is_floating_point() else weight.dtype


class _Fp8Matmul(torch.autograd.Function):
    """``x @ w.T + b`` with fp8 inputs and gradient, fp32 accumulation, and the delayed scales of its layer."""

    @staticmethod
    def forward(
        ctx: Any, x: Tensor, weight: Tensor, bias: Tensor | None, layer: Linear, rcp: recipe.DelayedScaling
    ) -> Tensor:
        out_dtype = _matmul_dtype(x, weight)
        fwd = layer._scaling(rcp, forward=True)
        fwd.update_scales(rcp)
        x_fp8 = quantize(x, fwd.scale[0], rcp.fp8_format, forward=True)
        w_fp8 = quantize(weight, fwd.scale[1], rcp.fp8_format, forward=True)
        if fp8.is_measurement():
            fwd.record([x.detach().abs().amax(), weight.detach().abs().amax()])
        with torch.autocast(x.device.type, enabled=False):
            out = F.linear(dequantize(x_fp8, fwd.scale[0]), dequantize(w_fp8, fwd.scale[1]))
            if bias is not None:
                out = out + bias.float()
        ctx.save_for_backward(x_fp8, w_fp8, fwd.scale.clone())
        ctx.layer, ctx.recipe, ctx.has_bias, ctx.measure = layer, rcp, bias is not None, fp8.is_measurement()
        ctx.dtypes = (x.dtype, weight.dtype, bias.dtype if bias is not None else None)
        return out.to(out_dtype)

    @staticmethod
    def backward(ctx: Any, grad_out: Tensor) -> tuple[Tensor | None, ...]:
        x_fp8, w_fp8, fwd_scale = ctx.saved_tensors
        rcp: recipe.DelayedScaling = ctx.recipe
        bwd = ctx.layer._scaling(rcp, forward=False)
        bwd.update_scales(rcp)
        g_fp8 = quantize(grad_out, bwd.scale[0], rcp.fp8_format, forward=False)
        if ctx.measure:
            bwd.record([grad_out.detach().abs().amax()])
        x_dtype, w_dtype, b_dtype = ctx.dtypes
        with torch.autocast(grad_out.device.type, enabled=False):
            g = dequantize(g_fp8, bwd.scale[0])
            x = dequantize(x_fp8, fwd_scale[0])
            w = dequantize(w_fp8, fwd_scale[1])
            grad_x = (g @ w).to(x_dtype) if ctx.needs_input_grad[0] else None
            grad_w = (g.reshape(-1, g.shape[-1]).t() @ x.reshape(-1, x.shape[-1])).to(w_dtype)
            grad_b = grad_out.float().reshape(-1, grad_out.shape[-1]).sum(0).to(b_dtype) if ctx.has_bias else None
        return grad_x, grad_w, grad_b, None, None


class Linear(nn.Module):
    """The engine's ``Linear``: ``y = x @ weight.T + bias``, in fp8 inside an enabled :func:`fp8_autocast`.

    The arguments are the engine's; tensor parallelism (``tp_size > 1``, ``parallel_mode``) is not emulated and
    refused. ``device="hpu"`` (the default) means the stand-in's device.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        sequence_parallel: bool = False,
        tp_group: Any = None,
        tp_size: int = 1,
        get_rng_state_tracker: Any = None,
        init_method: Any = None,
        bias: bool = True,
        return_bias: bool = False,
        params_dtype: torch.dtype | None = None,
        parallel_mode: str | None = None,
        skip_weight_param_allocation: bool = False,
        device: torch.device | str = "hpu",
        minimize_memory: bool = False,
    ) -> None:
        super().__init__()
        if tp_size != 1 or parallel_mode is not None or sequence_parallel:
            raise ValueError(
                "te.Linear's tensor parallelism (tp_size, parallel_mode, sequence_parallel) is not emulated on the"
                " CPU stand-in; leave them at their defaults."
            )
        self.in_features, self.out_features = in_features, out_features
        self.return_bias = return_bias
        dtype = params_dtype or torch.get_default_dtype()
        target = torch.device(device)
        if target.type == "hpu":
            target = machine.current().torch_device()
        self.weight = nn.Parameter(torch.empty(out_features, in_features, dtype=dtype, device=target))
        self.bias = nn.Parameter(torch.zeros(out_features, dtype=dtype, device=target)) if bias else None
        if init_method is not None:
            init_method(self.weight)
        else:
            nn.init.normal_(self.weight, mean=0.0, std=_INIT_STD)
        self._fp8_scaling: dict[bool, ScalingState] = {}

    def _scaling(self, rcp: recipe.DelayedScaling, forward: bool) -> ScalingState:
        """This layer's delayed-scaling state for the forward (input, weight) or backward (gradient) tensors."""
        roles = 2 if forward else 1
        state = self._fp8_scaling.get(forward)
        if state is None or not state.fits(rcp, roles):
            state = ScalingState(roles, rcp, forward, self.weight.device)
            self._fp8_scaling[forward] = state
        elif state.scale.device != self.weight.device:  # the layer moved (to the host and back, say)
            state.amax_history = state.amax_history.to(self.weight.device)
            state.scale = state.scale.to(self.weight.device)
        return state

    @property
    def fp8_meta(self) -> dict[str, ScalingState]:
        """The layer's delayed-scaling state: ``"scaling_fwd"`` (input, weight) and ``"scaling_bwd"`` (gradient).

        Each has the engine's ``scale``, ``scale_inv`` and ``amax_history`` (``[history, role]``); an entry exists
        once the layer ran in fp8 in that direction.
        """
        names = {True: "scaling_fwd", False: "scaling_bwd"}
        return {names[forward]: state for forward, state in self._fp8_scaling.items()}

    def save_fp8_meta(self) -> dict[str, dict[str, Any]]:
        """A copy of the layer's scaling state, for :meth:`load_fp8_meta` (around an HPU graph's warm-up runs)."""
        return {name: state.snapshot() for name, state in self.fp8_meta.items()}

    def load_fp8_meta(self, fp8_meta: dict[str, dict[str, Any]]) -> None:
        """Put back a :meth:`save_fp8_meta` copy, into the tensors the layer (and graphs captured over it) use."""
        current = self.fp8_meta
        for name, saved in fp8_meta.items():
            current[name].restore(saved)

    def forward(self, inp: Tensor, is_first_microbatch: bool | None = None) -> Tensor | tuple[Tensor, Tensor | None]:
        bias = None if self.return_bias else self.bias
        if fp8.is_fp8_enabled():
            out = _Fp8Matmul.apply(inp, self.weight, bias, self, fp8.get_fp8_recipe())
        else:
            out = F.linear(inp, self.weight, bias)
        return (out, self.bias) if self.return_bias else out

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"
