"""``habana_frameworks.torch.distributed`` on the stand-in: the package of ``hccl``."""
