"""Tests of ``lightning_hpu.pytorch.profilers``."""
