"""Tests of ``gaudi_standin.bridge.habana_frameworks.torch.utils.debug``."""
