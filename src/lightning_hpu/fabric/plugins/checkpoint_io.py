"""Fabric's checkpoint IO on HPU: :class:`~lightning_hpu.HPUCheckpointIO`, the one class both trees use (it lives
below both, in :mod:`lightning_hpu.checkpoint.io`, as Lightning's ``CheckpointIO`` is Fabric's for the Trainer too)."""

from lightning_hpu.checkpoint.io import HPUCheckpointIO

__all__ = ["HPUCheckpointIO"]
