"""Tests of ``lightning_hpu.pytorch.strategies``."""
