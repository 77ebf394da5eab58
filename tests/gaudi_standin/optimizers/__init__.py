"""Tests of ``gaudi_standin.optimizers``."""
