"""The ``"hccl"`` process group on the stand-in: gloo on host views of the ``hpu`` tensors, with HCCL's rules.

- ``process_group``: the process group and its registration as torch's ``"hccl"`` backend;
- ``hccl_rules``: what HCCL refuses (reduce ops, dtypes, collectives inside a graph capture) and computes in fp32;
- ``gloo_host``: the host views gloo works on.
"""
