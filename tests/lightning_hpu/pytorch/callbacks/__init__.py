"""Tests of ``lightning_hpu.pytorch.callbacks``."""
