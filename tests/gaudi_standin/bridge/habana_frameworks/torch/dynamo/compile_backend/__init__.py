"""Tests of ``gaudi_standin.bridge.habana_frameworks.torch.dynamo.compile_backend``."""
