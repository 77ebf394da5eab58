"""lightning_hpu.device."""
