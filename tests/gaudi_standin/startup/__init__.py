"""Tests of ``gaudi_standin.startup``."""
