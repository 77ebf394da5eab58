"""Tests of ``gaudi_standin.bridge``."""
