"""Tests of ``gaudi_standin.graphs``."""
