"""Tests of ``gaudi_standin.bridge.habana_frameworks.torch.hpex.experimental.transformer_engine``."""
