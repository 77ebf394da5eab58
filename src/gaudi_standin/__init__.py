"""The CPU stand-in for the Intel Gaudi bridge: ``habana_frameworks`` and a real ``hpu`` torch device on the CPU.

It is a bridge, not a plugin: with ``LIGHTNING_HPU_BACKEND=cpu`` (and no real bridge installed), ``import
habana_frameworks...`` serves the modules of :mod:`gaudi_standin.bridge` (the import hook in :mod:`.startup`, run at
every Python start by a ``.pth`` file and when torch loads its device backends, :mod:`.autoload`), so a script written
for a Gaudi, and lightning-hpu's own backend, run on the CPU unchanged. It imports neither Lightning nor
lightning_hpu, and nothing of it is built or loaded unless the stand-in was chosen.

- ``device``: torch's ``hpu`` device made real (a small C++ library: tensors on ``hpu:N``, host memory counted per
  device, HPU autocast with the bridge's op lists);
- ``runtime``: the emulated runtime of the process (devices, binding, step markers, memory, counters);
- ``bridge``: the bridge's Python API (``habana_frameworks.torch.core``, ``.hpu``, ``.hpex``, ``.distributed``,
  ``.utils``), calling the runtime;
- ``graphs``, ``graph_caches`` (keyed by ``graph_keys``), ``graphed_callables``, ``lazy_graph_cache``: HPU graphs
  and the lazy-mode graph cache; ``compile_backend``: ``torch.compile(backend="hpu_backend")``;
- ``process_group``: the ``"hccl"`` process group over gloo with HCCL's rules; ``optimizers``: the fused optimizers;
  ``deepspeed_accelerator``: DeepSpeed's accelerator on the stand-in.

Tests and benchmarks read what only the stand-in knows from :func:`gaudi_standin.emulator.machine.current` (``counters``).
This module imports only the standard library: it runs at every Python start.
"""
