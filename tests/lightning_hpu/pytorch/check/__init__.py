"""Tests of ``lightning_hpu.pytorch.check``."""
