"""``habana_frameworks.torch.dynamo.debug_utils`` on the stand-in: the package of the compile backend's ``logger``."""
