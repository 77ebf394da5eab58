"""Tests of ``lightning_hpu.runtime``."""
