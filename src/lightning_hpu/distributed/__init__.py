"""The Lightning-free distributed pieces every HPU strategy (Trainer and Fabric) is built on.

HCCL's rules and process group, collectives HCCL accepts, fast DDP's flat gradients, sharding helpers, DeepSpeed's
configuration, the rank watchdog, the SIGTERM vote, start methods and ``torchrun`` restarts. These modules may use
``lightning.fabric`` utilities but never import ``lightning.pytorch``: :mod:`lightning_hpu.fabric` stands on them.
"""
