"""Tests of ``lightning_hpu.pytorch.ray``."""
