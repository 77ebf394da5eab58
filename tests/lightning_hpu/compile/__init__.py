"""Tests of ``lightning_hpu.compile``."""
