"""The precision pieces both trees build on (below them, as Lightning's Trainer plugins build on Fabric's): the one
table of precision names (:mod:`~lightning_hpu.precision.names`, which every layer may ask), Fabric's
:class:`~lightning_hpu.HPUPrecision`, the FSDP and DeepSpeed precision mixins, lightning-habana's arguments.

Imports (the layering test checks this paragraph): of Lightning, ``lightning.fabric``; of this package, ``device``,
``fp8``, ``runtime`` and ``support``.
"""
