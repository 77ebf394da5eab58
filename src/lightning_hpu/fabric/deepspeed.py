"""Former home of Fabric's DeepSpeed strategy, now :mod:`lightning_hpu.fabric.strategies.deepspeed`; kept
importable."""

from lightning_hpu.fabric.strategies.deepspeed import HPUDeepSpeedStrategy

__all__ = ["HPUDeepSpeedStrategy"]
