"""Tests of ``lightning_hpu.device``."""
