"""Device features below both trees: Fabric's ``HPUAccelerator`` (which the Trainer's extends), the ``devices``
argument and process binding, the generation's precision rules, autocast op lists, the fused optimizers (and the fused
AdamW conversion), and a loss mean kept on the device.

Imports (the layering test checks this paragraph): of Lightning, ``lightning.fabric``; of this package, ``runtime``
and ``support``.
"""
