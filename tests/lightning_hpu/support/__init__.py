"""Tests of ``lightning_hpu.support``."""
