"""Tests of ``lightning_hpu.distributed``."""
