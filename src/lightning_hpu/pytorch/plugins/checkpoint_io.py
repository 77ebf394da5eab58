"""Checkpoint IO for HPU in the Trainer: the same plugin as Fabric's (Lightning's Trainer uses Fabric's IO classes)."""

from lightning_hpu.checkpoint.io import HPUCheckpointIO

__all__ = ["HPUCheckpointIO"]
