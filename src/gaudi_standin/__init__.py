"""The CPU stand-in for the Intel Gaudi bridge: ``habana_frameworks`` and a real ``hpu`` torch device on the CPU.

It is a bridge, not a plugin: with ``LIGHTNING_HPU_BACKEND=cpu`` (and no real bridge installed), ``import
habana_frameworks...`` serves the modules of :mod:`gaudi_standin.bridge` (the import hook of :mod:`.startup`, run at
every Python start by a ``.pth`` file and when torch loads its device backends), so a script written for a Gaudi, and
lightning-hpu's own backend, run on the CPU unchanged. It imports neither Lightning nor lightning_hpu, and nothing of
it is built or loaded unless the stand-in was chosen. Its folders, from the bottom up:

- ``startup``: the import hook, torch's entry point and the early loading of the device library (standard library
  only);
- ``device``: torch's ``hpu`` device made real (a small C++ library: tensors on ``hpu:N``, host memory counted per
  device, HPU autocast with the bridge's op lists);
- ``emulator``: the emulated Gaudi of the process (devices, binding, step markers, memory, counters, the graph
  compiler's caches and the environment it reads);
- ``graphs``: HPU graphs, captured and replayed for real, and the bridge's graph caches;
- ``distributed``: the ``"hccl"`` process group over gloo with HCCL's rules;
- ``optimizers``, ``ops``: the fused optimizers, and the bridge's kernels and custom ops (``torch.ops.hpu``);
- ``compiler``: ``torch.compile(backend="hpu_backend")``, its settings and compile logs (which the bridge's
  ``dynamo.compile_backend`` modules serve under the bridge's names);
- ``bridge``: the bridge's Python API, laid out as the bridge's own module tree (``bridge/habana_frameworks/...``);
- ``deepspeed_hpu``: DeepSpeed's accelerator on the stand-in.

A folder imports only folders listed before it, in functions too (``tests/repository/test_layers.py`` checks it).

Tests and benchmarks read what only the stand-in knows from :func:`gaudi_standin.emulator.machine.current`
(``counters``). This module imports only the standard library: it runs at every Python start.
"""
