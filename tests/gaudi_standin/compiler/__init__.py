"""Tests of ``gaudi_standin.compiler``."""
