"""Tests of ``gaudi_standin.ops``."""
