"""Tests of ``lightning_hpu.hpu_graphs``."""
