"""``habana_frameworks.torch.utils`` on the stand-in: the package of ``debug``, ``experimental`` and
``library_loader``."""
