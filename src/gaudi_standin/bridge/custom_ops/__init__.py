"""``torch.ops.hpu``: the bridge's custom ops that optimum-habana's models call, defined by importing this package.

One module per op family, each computing the bridge's op with a reference formula in torch ops: ``fp8`` (casts,
fp8 GEMM and softmax), ``moe`` (``mixture_of_experts``), ``rope`` (``rotary_pos_embedding`` and its backward, with
autograd), ``int4`` (``convert_from_uint4``/``convert_from_int4``), ``lamb`` (the fused LAMB optimizer's phases),
``attention`` (``scaled_masked_triangular_softmax``, ``kv_reorder``, ``custom_softmax``). Importing the emulated
``habana_frameworks.torch`` imports this package, as loading the bridge registers its ops.
"""

from __future__ import annotations

from gaudi_standin.bridge.custom_ops import attention, fp8, int4, lamb, moe, rope
from gaudi_standin.bridge.custom_ops.registry import LIBRARY

__all__ = ["LIBRARY", "attention", "fp8", "int4", "lamb", "moe", "rope"]
