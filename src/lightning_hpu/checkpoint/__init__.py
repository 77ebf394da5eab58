"""lightning_hpu.checkpoint."""
