"""Tests of ``lightning_hpu.optimum``."""
