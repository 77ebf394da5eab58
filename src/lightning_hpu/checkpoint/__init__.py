"""Writing checkpoint files atomically, with host copies of the tensors (Lightning-free)."""
