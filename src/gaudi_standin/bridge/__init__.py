"""The bridge's Python API (``habana_frameworks.torch...``, ``torch.hpu``, ``device="hpu"``) served by the stand-in.

``bridge/habana_frameworks/`` is the bridge's own module tree: the module at a path here serves the bridge module of
that path (with ``LIGHTNING_HPU_BACKEND=cpu`` and no real bridge, the import hook of
:mod:`gaudi_standin.startup.import_hook` maps ``habana_frameworks.X`` onto ``gaudi_standin.bridge.habana_frameworks.X``,
the same module object under both names), so a script written for a Gaudi runs unchanged on the CPU. Its functions
call the emulated Gaudi (:mod:`gaudi_standin.emulator`), as the bridge calls its runtime; lightning-hpu reaches them
only through ``habana_frameworks``, as on a Gaudi.

- ``torch``: importing it makes the stand-in's ``hpu`` device real (:mod:`gaudi_standin.device`), defines the custom
  ops and imports ``core`` (``mark_step``, ``is_lazy``), ``hpu`` and ``distributed.hccl`` (the ``"hccl"`` backend);
- ``torch.hpu``, also ``torch.hpu``: devices, memory, streams and events, random state (``random``), the dynamic-shape
  and autocast switches, ``graphs`` (in lazy mode the HPU-graph API) and ``metrics`` (the bridge's metrics over the
  stand-in's counters);
- ``torch.hpex``: ``optimizers`` (and ``optimizers.distributed``), ``normalization``, ``movingavrg``, ``kernels``
  (``FusedSDPA``, the rotary-embedding helpers, ``Fp8Ops``) and ``experimental.transformer_engine`` (fp8 by
  quantize-dequantize with delayed scaling);
- ``torch.dynamo.compile_backend``: ``config`` (the ``hpu_backend`` settings) and ``experimental``;
- ``torch.utils``: ``debug``, ``library_loader``, ``experimental`` (with ``detect_recompilation``).

What is not a bridge module lives outside this tree: the kernels' formulas and custom ops in :mod:`gaudi_standin.ops`,
the graph machinery in :mod:`gaudi_standin.graphs`, the ``hpu_backend`` itself in :mod:`gaudi_standin.compiler`.
"""
