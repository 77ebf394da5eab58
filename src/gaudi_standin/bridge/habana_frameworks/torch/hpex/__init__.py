"""``habana_frameworks.torch.hpex`` on the stand-in: the package of the fused optimizers, normalization, kernels and
the experimental transformer engine."""
