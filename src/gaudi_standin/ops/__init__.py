"""``torch.ops.hpu``: the bridge's custom ops that optimum-habana's models call, each module defining one family.

``fp8`` (casts, fp8 GEMM and softmax), ``moe`` (``mixture_of_experts``), ``rope`` (``rotary_pos_embedding`` and its
backward, with autograd), ``int4`` (``convert_from_uint4``/``convert_from_int4``), ``lamb`` (the fused LAMB
optimizer's phases), ``attention`` (``scaled_masked_triangular_softmax``, ``kv_reorder``, ``custom_softmax``, the
CTC loss). Each computes the bridge's op with a reference formula in torch ops. Importing the emulated
``habana_frameworks.torch`` imports them all, as loading the bridge registers its ops; this package itself imports
none, so that a module may import the one family it calls.
"""
