"""Tests of ``lightning_hpu.profiler``."""
