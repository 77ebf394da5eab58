"""Tests of ``lightning_hpu.pytorch.plugins``."""
