"""Tests of ``lightning_hpu.checkpoint``."""
