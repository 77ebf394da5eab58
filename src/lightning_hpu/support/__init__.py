"""lightning_hpu.support."""
