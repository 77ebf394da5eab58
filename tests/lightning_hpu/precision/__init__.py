"""Tests of ``lightning_hpu.precision``."""
