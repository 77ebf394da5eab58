"""``hpu::mixture_of_experts``: the bridge's fused mixture-of-experts MLP (Mixtral, DeepSeek, Qwen-MoE).

For each token ``x`` routed (``expert_routing_table``, global expert ids) to experts ``e`` with weights
``router_weights``, the output is ``sum_e weight_e * (act(x @ W1_e) * (x @ W2_e)) @ W3_e``, as the bridge's eager
kernel computes it. The lists hold the experts ``experts_min..experts_max``; ``permuted_weights=True`` means they are
stored as ``nn.Linear`` weights (``[out, in]``). ``fused_weights`` takes ``W1`` and ``W2`` stacked in one ``W12``
(``W1`` first). Tokens routed to experts outside the range get no contribution from them (expert parallelism).
The ``fp8_measurement`` overloads (and their ``_fused_weights`` form) also return what fp8 calibration measures: per
expert of the lists, the largest value of ``act(x @ W1_e) * (x @ W2_e)`` over every token, in fp32, as the bridge's
eager kernel computes it (whatever ``measurement_mode`` says).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

from gaudi_standin.ops.registry import define

__all__ = [
    "mixture_of_experts",
    "mixture_of_experts_fp8_measurement",
    "mixture_of_experts_fp8_measurement_fused_weights",
    "mixture_of_experts_fused_weights",
]

ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {"gelu": F.gelu, "relu": F.relu, "silu": F.silu}


def _experts(
    hidden_states: Tensor,
    routing: Tensor,
    router_weights: Tensor,
    gate_up: Sequence[tuple[Tensor, Tensor]],
    w3: Sequence[Tensor],
    permuted: bool,
    activation: str,
    experts_min: int,
    experts_max: int,
) -> tuple[Tensor, Tensor]:
    """The experts' weighted output and each expert's largest ``act(x @ W1) * (x @ W2)`` (fp32)."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"mixture_of_experts: activation must be one of {sorted(ACTIVATIONS)}, not {activation!r}.")
    if len(gate_up) != experts_max - experts_min + 1 or len(w3) != len(gate_up):
        raise ValueError(
            f"mixture_of_experts: the weight lists must hold experts {experts_min}..{experts_max}"
            f" ({experts_max - experts_min + 1} each), not {len(gate_up)} and {len(w3)}."
        )
    act = ACTIVATIONS[activation]
    x = hidden_states.reshape(-1, hidden_states.shape[-1])
    routing = routing.reshape(x.shape[0], -1)
    weights = router_weights.reshape(routing.shape).to(x.dtype)
    out = torch.zeros_like(x)
    amax = []
    for index, ((w1, w2), down) in enumerate(zip(gate_up, w3, strict=False)):
        if permuted:
            w1, w2, down = w1.t(), w2.t(), down.t()
        token_weight = (weights * (routing == experts_min + index)).sum(dim=-1, keepdim=True)
        gated = act(x @ w1) * (x @ w2)
        amax.append(gated.amax().float())
        out = out + (gated @ down) * token_weight
    return out.reshape(hidden_states.shape), torch.stack(amax)


def mixture_of_experts(
    hidden_states: Tensor,
    expert_routing_table: Tensor,
    router_weights: Tensor,
    w1: list[Tensor],
    w2: list[Tensor],
    w3: list[Tensor],
    permuted_weights: bool,
    activation: str,
    experts_min: int,
    experts_max: int,
) -> Tensor:
    return _experts(
        hidden_states,
        expert_routing_table,
        router_weights,
        list(zip(w1, w2, strict=False)),
        w3,
        permuted_weights,
        activation,
        experts_min,
        experts_max,
    )[0]


def mixture_of_experts_fused_weights(
    hidden_states: Tensor,
    expert_routing_table: Tensor,
    router_weights: Tensor,
    w12: list[Tensor],
    w3: list[Tensor],
    permuted_weights: bool,
    activation: str,
    experts_min: int,
    experts_max: int,
) -> Tensor:
    return _experts(
        hidden_states,
        expert_routing_table,
        router_weights,
        _split(w12, permuted_weights),
        w3,
        permuted_weights,
        activation,
        experts_min,
        experts_max,
    )[0]


def _split(w12: list[Tensor], permuted_weights: bool) -> list[tuple[Tensor, Tensor]]:
    """``W12`` stacked along the output features (rows of an ``nn.Linear`` weight, else columns) -> ``(W1, W2)``."""
    dim = 0 if permuted_weights else 1
    return [(w.chunk(2, dim=dim)[0], w.chunk(2, dim=dim)[1]) for w in w12]


def mixture_of_experts_fp8_measurement(
    hidden_states: Tensor,
    expert_routing_table: Tensor,
    router_weights: Tensor,
    w1: list[Tensor],
    w2: list[Tensor],
    w3: list[Tensor],
    permuted_weights: bool,
    activation: str,
    experts_min: int,
    experts_max: int,
    measurement_mode: bool,
) -> tuple[Tensor, Tensor]:
    pairs = list(zip(w1, w2, strict=False))
    routing = (hidden_states, expert_routing_table, router_weights)
    return _experts(*routing, pairs, w3, permuted_weights, activation, experts_min, experts_max)


def mixture_of_experts_fp8_measurement_fused_weights(
    hidden_states: Tensor,
    expert_routing_table: Tensor,
    router_weights: Tensor,
    w12: list[Tensor],
    w3: list[Tensor],
    permuted_weights: bool,
    activation: str,
    experts_min: int,
    experts_max: int,
    measurement_mode: bool,
) -> tuple[Tensor, Tensor]:
    pairs = _split(w12, permuted_weights)
    routing = (hidden_states, expert_routing_table, router_weights)
    return _experts(*routing, pairs, w3, permuted_weights, activation, experts_min, experts_max)


_ROUTING = "Tensor hidden_states, Tensor expert_routing_table, Tensor router_weights"
_RANGE = "bool permuted_weights, str activation, int experts_min, int experts_max) -> Tensor"
define(f"mixture_of_experts({_ROUTING}, Tensor[] w1, Tensor[] w2, Tensor[] w3, {_RANGE}", mixture_of_experts)
define(
    f"mixture_of_experts.fused_weights({_ROUTING}, Tensor[] w12, Tensor[] w3, {_RANGE}",
    mixture_of_experts_fused_weights,
)
_MEASURED = "bool permuted_weights, str activation, int experts_min, int experts_max, bool measurement_mode)"
define(
    f"mixture_of_experts.fp8_measurement({_ROUTING}, Tensor[] w1, Tensor[] w2, Tensor[] w3, {_MEASURED}"
    " -> (Tensor, Tensor)",
    mixture_of_experts_fp8_measurement,
)
define(
    f"mixture_of_experts.fp8_measurement_fused_weights({_ROUTING}, Tensor[] w12, Tensor[] w3, {_MEASURED}"
    " -> (Tensor, Tensor)",
    mixture_of_experts_fp8_measurement_fused_weights,
)
