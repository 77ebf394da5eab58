"""Tests of ``lightning_hpu.integration``."""
