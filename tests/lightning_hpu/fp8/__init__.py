"""Tests of ``lightning_hpu.fp8``."""
