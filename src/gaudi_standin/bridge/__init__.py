"""The bridge's Python API (``habana_frameworks.torch...``, ``torch.hpu``, ``device="hpu"``) served by the stand-in.

With ``LIGHTNING_HPU_BACKEND=cpu`` and no real bridge, the import hook in ``gaudi_standin.startup.import_hook`` maps each
``habana_frameworks`` module onto a module here, so a script written for a Gaudi runs unchanged on the CPU. Every
function calls the very backend the package uses (:func:`lightning_hpu.runtime.get_backend`, the
:class:`~gaudi_standin.CPUStandInBackend`): one implementation of the device's rules.

- ``torch_package``: ``habana_frameworks.torch``; importing it makes the stand-in's ``hpu`` device real
  (:mod:`gaudi_standin.device`);
- ``core``: ``habana_frameworks.torch.core`` (``mark_step``, ``is_lazy``, ``hpu``);
- ``hpu``: ``habana_frameworks.torch.hpu``, also ``torch.hpu`` (devices, memory, dynamic-shape switch, autocast
  state, ``FusedSDPA``'s recomputation switch, and in lazy mode the HPU-graph API), a package with ``graphs`` (the
  graph API) and ``metrics`` (the bridge's metrics over the stand-in's counters);
- ``optimizers`` / ``normalization``: ``hpex.optimizers`` (``FusedAdamW``, ``FusedSGD``, ``FusedLamb``,
  ``FusedAdagrad``, ``FusedLars``) and ``hpex.normalization`` (``FusedClipNorm``, ``FusedRMSNorm``); ``movingavrg``:
  ``hpex.movingavrg`` (``FusedEMA``);
- ``kernels``: ``hpex.kernels`` (``FusedSDPA``, the rotary-embedding helpers), plain torch ops whose backward
  recomputes the forward (``recompute``); ``library_loader``: ``habana_frameworks.torch.utils.library_loader``;
- ``hccl``: ``habana_frameworks.torch.distributed.hccl`` (registers the ``"hccl"`` backend on import).
- ``transformer_engine`` (with ``te_recipe``, ``te_fp8``): ``hpex.experimental.transformer_engine``, fp8 by
  quantize-dequantize with delayed scaling; ``debug``: ``habana_frameworks.torch.utils.debug``.
"""
