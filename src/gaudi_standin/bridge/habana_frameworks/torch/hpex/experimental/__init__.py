"""``habana_frameworks.torch.hpex.experimental`` on the stand-in: the package of ``transformer_engine``."""
