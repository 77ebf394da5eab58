"""Tests of ``lightning_hpu.fabric.plugins``."""
