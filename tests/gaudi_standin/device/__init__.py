"""Tests of ``gaudi_standin.device``."""
