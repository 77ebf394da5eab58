"""Tests of ``lightning_hpu.check``."""
