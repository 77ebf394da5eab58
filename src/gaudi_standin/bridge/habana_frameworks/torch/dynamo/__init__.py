"""``habana_frameworks.torch.dynamo`` on the stand-in: the package of ``compile_backend``."""
