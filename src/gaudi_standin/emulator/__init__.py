"""The emulated Gaudi of this process, below the bridge: what the real bridge finds in its C++ runtime.

- ``machine``: the process's devices, binding, step markers, memory and counters (:func:`~.machine.current`);
- ``counters``: what only the stand-in knows (syncs, step markers, captures, recipes), read by tests and benchmarks;
- ``environment``: the environment variables the stand-in reads (the bridge's and its own);
- ``lazy_graph_cache``, ``recipe_store``, ``dynamic_shapes``: the graph compiler's side of the device: the
  lazy-mode graph cache, the on-disk recipe cache and the dynamic-shape switch.
"""
