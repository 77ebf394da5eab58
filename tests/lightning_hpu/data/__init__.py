"""Tests of ``lightning_hpu.data``."""
