"""The distributed pieces every HPU strategy (Trainer and Fabric) is built on, below both trees.

HCCL's rules and process group, collectives HCCL accepts, fast DDP's flat gradients, sharding helpers, DeepSpeed's
configuration, the rank watchdog, the SIGTERM vote, start methods and ``torchrun`` restarts, and the strategy
mixins both trees share (docs/architecture.md, "What each strategy is built from"). They build on Lightning's Fabric
and never on its Trainer: :mod:`lightning_hpu.fabric` stands on them.

Imports (the layering test checks this paragraph): of Lightning, ``lightning.fabric``; of this package,
``checkpoint``, ``device``, ``precision`` (its table of names alone) and ``runtime``.
"""
