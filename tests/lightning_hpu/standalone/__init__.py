"""Tests of ``lightning_hpu.standalone``."""
